#!/bin/sh
# posedge-hq preremove (.deb prerm and .rpm %preun): stop and disable the
# service when the package goes away, not on upgrade. Messages not yet
# stored stay in the JetStream stream: nothing is lost by stopping.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl stop posedge-hq.service >/dev/null 2>&1 || true
		systemctl disable posedge-hq.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
