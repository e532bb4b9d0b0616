#!/bin/sh
# posedge-hq postinstall (.deb postinst and .rpm %post).
# Debian: $1 = configure, $2 = the version configured before ("" on a
# first install). rpm: $1 = 1 on a first install, 2 on an upgrade.
set -e

case "$1" in
configure) [ -z "${2:-}" ] && first=yes || first=no ;;
1) first=yes ;;
[2-9] | [1-9][0-9]*) first=no ;;
*) exit 0 ;;
esac

mkdir -p /var/lib/posedge-hq
chown posedge-hq:posedge-hq /var/lib/posedge-hq
chmod 0750 /var/lib/posedge-hq
if [ "$first" = yes ] && [ -f /etc/posedge/posedge-hq.yaml ]; then
	# The service reads the config as user posedge-hq; it may hold secrets.
	chgrp posedge-hq /etc/posedge/posedge-hq.yaml
	chmod 0640 /etc/posedge/posedge-hq.yaml
fi

if [ "$first" = yes ]; then
	echo "posedge-hq installed. Edit /etc/posedge/posedge-hq.yaml, check it with"
	echo "  posedge-hq check-config --config /etc/posedge/posedge-hq.yaml"
	echo "then start it: systemctl enable --now posedge-hq"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	if [ "$first" = no ]; then
		systemctl try-restart posedge-hq.service >/dev/null 2>&1 || true
	fi
fi
exit 0
