#!/bin/sh
# posedge-hq preinstall (.deb preinst and .rpm %pre): the system user and
# group the service runs as, its own (not the store daemon's).
set -e

if ! getent group posedge-hq >/dev/null 2>&1; then
	groupadd --system posedge-hq
fi
if ! getent passwd posedge-hq >/dev/null 2>&1; then
	useradd --system --gid posedge-hq --home-dir /var/lib/posedge-hq --no-create-home \
		--shell /usr/sbin/nologin --comment "posedge-hq headquarters receiver" posedge-hq
fi
exit 0
