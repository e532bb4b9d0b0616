#!/bin/sh
# posedge-hq postremove (.deb postrm and .rpm %postun). A remove keeps
# /var/lib/posedge-hq (a SQLite database of every store's sales) and the
# user; only a Debian purge deletes the folder.
set -e
POSEDGE_HQ_STATE=${POSEDGE_HQ_STATE:-/var/lib/posedge-hq}

if [ "$1" = purge ]; then
	rm -rf "$POSEDGE_HQ_STATE"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
