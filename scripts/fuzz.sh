#!/usr/bin/env bash
# make fuzz: every fuzz target of the module (found with
# `go test -list '^Fuzz' ./...`, so new targets join by themselves), one at
# a time for FUZZTIME each, then executions and crashes per target.
#
#   FUZZTIME=60s          how long each target runs
#   FUZZMINIMIZETIME=5s   how long the fuzzer may shrink an input; the
#                         default 60 s stalls execution for that long on a
#                         busy machine whenever it finds new coverage
#
# A crash leaves its input under <package>/testdata/fuzz/<target>/: commit
# it with the fix and it runs in every `go test` from then on. Exits 1 when
# any target crashed or did not build.
set -uo pipefail

FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}

if ! list=$(go test -list '^Fuzz' ./... 2>&1); then
	echo "$list"
	exit 1
fi
# -list prints a package's target names, then "ok <package> <time>".
targets=$(echo "$list" | awk '
	/^Fuzz/ { names = names " " $1; next }
	/^ok /  { n = split(names, a, " "); for (i = 1; i <= n; i++) print $2, a[i] }
	        { names = "" }')
if [ -z "$targets" ]; then
	echo "no fuzz targets found"
	exit 1
fi

summary=""
failed=0
while read -r pkg name; do
	echo "== $pkg $name ($FUZZTIME)"
	out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1)
	rc=$?
	execs=$(echo "$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2)
	crashes=0
	if [ $rc -ne 0 ]; then
		crashes=1 # go test -fuzz stops at the first crash
		failed=1
		echo "$out" | tail -40
	fi
	summary+=$(printf '%-40s %-28s %12s %8s' "$pkg" "$name" "${execs:-0}" "$crashes")$'\n'
done <<<"$targets"

printf '\n%-40s %-28s %12s %8s\n' package target executions crashes
printf '%s' "$summary"
exit $failed
