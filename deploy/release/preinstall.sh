#!/bin/sh
# stelae-bridge package, before its files are unpacked (deb: preinst
# install|upgrade; rpm: %pre): the system user and group the service runs
# as and the state directory belongs to. Kept on upgrades and on removal;
# a deb purge removes them (postremove.sh).
set -e
if ! getent group stelae-bridge >/dev/null 2>&1; then
  groupadd --system stelae-bridge
fi
if ! getent passwd stelae-bridge >/dev/null 2>&1; then
  useradd --system --gid stelae-bridge --home-dir /var/lib/stelae-bridge --no-create-home \
    --shell /usr/sbin/nologin --comment "stelae-bridge" stelae-bridge
fi
