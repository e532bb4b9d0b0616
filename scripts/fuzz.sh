#!/usr/bin/env bash
# make fuzz and make fuzz-short (the latter inside make test): every fuzz
# target of the module (each `func FuzzX(f *testing.F)` in a committed
# *_test.go, so new targets join by themselves), one at a time (`go test
# -fuzz` takes one target per run), then executions, new inputs, seconds
# and crashes per target.
#
#   FUZZTIME=60s          how long each target runs: a duration, or a count
#                         of executions such as 20000x. make fuzz-short (the
#                         gate) uses a count: Go 1.26's fuzz coordinator can
#                         end a duration run with a bare "context deadline
#                         exceeded" and no input when the machine is busy
#                         (golang/go#75804, fixed in Go 1.27); a count has
#                         no deadline to race, and a gate that fails at
#                         random is no gate.
#   FUZZMINIMIZETIME=5s   how long the fuzzer may shrink an input (duration
#                         or count); the default 60 s stalls execution for
#                         that long on a busy machine whenever it finds new
#                         coverage
#
# A crash leaves its input under <package>/testdata/fuzz/<target>/ (named
# in the output): commit it with the fix and it runs in every `go test`
# from then on. Exits 1 when any target crashed or did not build.
set -uo pipefail

FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}
cd "$(dirname "$0")/.."

# Found without building anything: "./<dir> <target>" per line.
targets=$(git ls-files -- '*_test.go' |
	xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*|./\1 \2|' | sort -u)
if [ -z "$targets" ]; then
	echo "no fuzz targets found"
	exit 1
fi

summary=""
failed=0
start_all=$SECONDS
while read -r pkg name; do
	echo "== $pkg $name ($FUZZTIME)"
	corpus="$pkg/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | sort)
	start=$SECONDS
	out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1)
	rc=$?
	secs=$((SECONDS - start))
	execs=$(echo "$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2)
	newin=$(echo "$out" | grep -o 'new interesting: [0-9]*' | tail -1 | cut -d' ' -f3)
	crashes=0
	if [ $rc -ne 0 ]; then
		crashes=1 # go test -fuzz stops at the first crash
		failed=1
		echo "$out" | tail -40
		added=$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort))
		if [ -n "$added" ]; then
			echo "crashing input: $corpus/$added (go test -run '$name/$added' $pkg)"
		else
			echo "no input written: the build or the fuzzer itself failed"
		fi
	fi
	echo "   ${execs:-0} executions, ${newin:-0} new inputs, ${secs}s, rc $rc"
	summary+=$(printf '%-24s %-34s %10s %6s %6s %7s' "$pkg" "$name" "${execs:-0}" "${newin:-0}" "$secs" "$crashes")$'\n'
done <<<"$targets"

printf '\n%-24s %-34s %10s %6s %6s %7s\n' package target executions new secs crashes
printf '%s' "$summary"
echo "fuzz: $(echo "$targets" | wc -l) targets in $((SECONDS - start_all))s (FUZZTIME=$FUZZTIME)"
exit $failed
