#!/bin/sh
# stelae-bridge package, after its files are in place (deb: postinst
# configure [OLD-VERSION]; rpm: %post with the count of installed
# versions). systemd reads the units; an upgrade restarts a running bridge
# (with stelae-bridge.socket enabled the restart fails no call). A first
# install enables and starts nothing: edit
# /etc/stelae-bridge/destinations.yaml, then
#   sudo systemctl enable --now stelae-bridge.socket stelae-bridge
set -e
upgrade=false
case "$1" in
configure) [ -n "${2:-}" ] && upgrade=true ;;
[2-9] | [1-9][0-9]*) upgrade=true ;;
esac
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
  if $upgrade; then
    systemctl try-restart stelae-bridge.service >/dev/null 2>&1 || true
  fi
fi
