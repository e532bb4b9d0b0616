#!/bin/sh
# posedge preinstall (.deb preinst and .rpm %pre): the system user and
# group the service runs as. Debian passes "install"/"upgrade", rpm 1/2.
set -e

if ! getent group posedge >/dev/null 2>&1; then
	groupadd --system posedge
fi
if ! getent passwd posedge >/dev/null 2>&1; then
	useradd --system --gid posedge --home-dir /var/lib/posedge --no-create-home \
		--shell /usr/sbin/nologin --comment "posedge store edge daemon" posedge
fi
exit 0
