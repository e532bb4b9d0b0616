#!/bin/sh
# posedge postremove (.deb postrm and .rpm %postun). A remove keeps the
# journal under /var/lib/posedge and the posedge user: the journal may
# hold sales headquarters has not acknowledged yet. Only a Debian purge
# deletes /var/lib/posedge (rpm has no purge: an erase keeps it).
set -e
# The state folder; the variable is for the package's own tests.
POSEDGE_STATE=${POSEDGE_STATE:-/var/lib/posedge}

if [ "$1" = purge ]; then
	rm -rf "$POSEDGE_STATE"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
