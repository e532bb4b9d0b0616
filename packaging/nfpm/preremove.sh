#!/bin/sh
# posedge preremove (.deb prerm and .rpm %preun): stop and disable the
# service when the package goes away, not on upgrade.
# Debian: $1 = remove | upgrade | …; rpm: $1 = 0 on erase, 1 on upgrade.
# Removal is refused while the journal holds transactions headquarters has
# not acknowledged (POSEDGE_FORCE_REMOVE=1 removes anyway; the journal in
# /var/lib/posedge is kept by a remove either way, only a purge deletes it).
set -e

POSEDGE_BIN=${POSEDGE_BIN:-/usr/bin/posedge}
POSEDGE_CONFIG=${POSEDGE_CONFIG:-/etc/posedge/posedge.yaml}

# figure KEY: the value of "KEY": N in `posedge journal stats` (0 if absent).
figure() {
	printf '%s\n' "$stats" | sed -n "s/.*\"$1\": *\([0-9][0-9]*\).*/\1/p" | head -n 1
}

case "$1" in
remove | 0)
	if [ -z "${POSEDGE_FORCE_REMOVE:-}" ] && [ -x "$POSEDGE_BIN" ] && [ -f "$POSEDGE_CONFIG" ]; then
		if stats=$("$POSEDGE_BIN" journal stats --config "$POSEDGE_CONFIG" 2>/dev/null); then
			waiting=$(figure backlog)
			quarantined=$(figure quarantined)
			n=$((${waiting:-0} + ${quarantined:-0}))
			if [ "$n" -gt 0 ]; then
				echo "posedge: refusing to remove: $n transactions in the journal are not at HQ yet" >&2
				echo "  (${waiting:-0} waiting, ${quarantined:-0} quarantined; posedge status shows the backlog)." >&2
				echo "  Let posedge send them, or remove anyway with POSEDGE_FORCE_REMOVE=1 (the journal is kept)." >&2
				exit 1
			fi
		fi
	fi
	if [ -d /run/systemd/system ]; then
		systemctl stop posedge.service >/dev/null 2>&1 || true
		systemctl disable posedge.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
