#!/bin/sh
# stelae-bridge package, before its files are removed (deb: prerm remove,
# or upgrade; rpm: %preun with 0 on erase, 1 on upgrade). On removal the
# units are stopped and disabled; an upgrade leaves them to postinstall.sh.
set -e
case "$1" in
remove | 0)
  if command -v systemctl >/dev/null 2>&1; then
    if [ -d /run/systemd/system ]; then
      systemctl stop stelae-bridge.socket stelae-bridge.service >/dev/null 2>&1 || true
    fi
    systemctl disable stelae-bridge.socket stelae-bridge.service >/dev/null 2>&1 || true
  fi
  ;;
esac
