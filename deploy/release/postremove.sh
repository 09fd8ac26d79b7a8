#!/bin/sh
# stelae-bridge package, after its files are removed (deb: postrm remove,
# purge, upgrade...; rpm: %postun). A purge (dpkg --purge; dpkg itself
# removes the files under /etc) also removes the state (the sessions, the
# built-in authorization server's database, the children's caches) and the
# package's user and group. An rpm erase keeps them, as RPM distributions
# keep system users.
set -e
if [ "$1" = purge ]; then
  rm -rf /var/lib/stelae-bridge /var/cache/stelae-bridge
  # Only the user the package made (its home is the state directory).
  if [ "$(getent passwd stelae-bridge | cut -d: -f6)" = /var/lib/stelae-bridge ]; then
    userdel stelae-bridge >/dev/null 2>&1 || true
  fi
  if getent group stelae-bridge >/dev/null 2>&1; then
    groupdel stelae-bridge >/dev/null 2>&1 || true
  fi
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
