#!/bin/sh
# posedge postremove (.deb postrm and .rpm %postun). The journal under
# /var/lib/posedge and the posedge user are kept: the journal may hold
# sales headquarters has not acknowledged yet.
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
