#!/bin/sh
# posedge preremove (.deb prerm and .rpm %preun): stop and disable the
# service when the package goes away, not on upgrade.
# Debian: $1 = remove | upgrade | …; rpm: $1 = 0 on erase, 1 on upgrade.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl stop posedge.service >/dev/null 2>&1 || true
		systemctl disable posedge.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
