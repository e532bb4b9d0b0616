#!/bin/sh
# posedge postinstall (.deb postinst and .rpm %post).
# Debian: $1 = configure, $2 = the version configured before ("" on a
# first install). rpm: $1 = 1 on a first install, 2 on an upgrade.
set -e

case "$1" in
configure) [ -z "${2:-}" ] && first=yes || first=no ;;
1) first=yes ;;
[2-9] | [1-9][0-9]*) first=no ;;
*) exit 0 ;;
esac

getent passwd posedge >/dev/null 2>&1 || useradd --system --user-group --home-dir /var/lib/posedge \
	--no-create-home --shell /usr/sbin/nologin posedge

mkdir -p /var/lib/posedge
chown posedge:posedge /var/lib/posedge
chmod 0750 /var/lib/posedge
if [ "$first" = yes ] && [ -f /etc/posedge/posedge.yaml ]; then
	# The service reads the config as user posedge; it may hold secrets.
	chgrp posedge /etc/posedge/posedge.yaml
	chmod 0640 /etc/posedge/posedge.yaml
fi

if [ "$first" = yes ]; then
	echo "posedge installed. Edit /etc/posedge/posedge.yaml, check it with"
	echo "  posedge check-config --config /etc/posedge/posedge.yaml"
	echo "then start it: systemctl enable --now posedge"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	if [ "$first" = no ]; then
		# An upgrade restarts the daemon only if it was running.
		systemctl try-restart posedge.service >/dev/null 2>&1 || true
	fi
fi
exit 0
