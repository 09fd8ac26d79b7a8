package main

// serviceUsage is the usage of 'stelae-bridge service' (Windows).
const serviceUsage = `Usage: stelae-bridge service install [flags…] | uninstall | start | stop

On Windows, runs the bridge as a service of the service manager (as an
administrator): install registers it to start with Windows, with the
bridge's flags given after install (-config C:\…\destinations.yaml
-state-dir …); start and stop start it and stop it (stop drains the calls
in flight first, as SIGTERM does); uninstall stops it the same way, then
removes it. Its log goes to %ProgramData%\stelae-bridge\stelae-bridge.log,
its start and stop to the event log. On Linux, use the systemd units in
deploy/.
`
