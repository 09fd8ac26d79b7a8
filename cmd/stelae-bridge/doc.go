// Command stelae-bridge serves stdio MCP servers over MCP Streamable HTTP.
//
// It owns the process: flags and their environment variables (one table,
// flags.go), the logger and its batched output, signals, exit codes, the
// -check report, and what the bridge's children inherit (the environment
// without the bridge's own settings, the reaper, the state directory). It
// reads destinations.yaml with package config and hands everything else to
// bridge.New and Bridge.Serve: it holds no second copy of the wiring or of
// the defaults (every flag's default is bridge.Defaults', which takes each
// from the package that owns it: session.DefaultOptions,
// supervisor.DefaultOptions and DefaultProcessOptions,
// oauth.DefaultIssuerOptions).
//
// Exit codes: 0 after a clean shutdown (SIGINT, SIGTERM) or -check/-help/
// -version; 1 when the configuration is invalid or the bridge cannot serve;
// 2 for bad flags.
package main
