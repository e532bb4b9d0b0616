#!/usr/bin/env bash
# make profile: pprof CPU and allocation summaries (text) of the four hot
# paths, from the per-package benchmarks that run them in-process:
#
#   lookup   edge/api    BenchmarkItemLookupVsRawLimiter   (GET /v1/items over HTTP)
#   sale     edge/api    BenchmarkDurableSalesVsRawCommits (POST /v1/sales, Sentinel, WAIT, journal)
#   replay   sync/replay BenchmarkReplayVsRawPublish       (journal → JetStream)
#   ingest   sync/hq     BenchmarkIngest/postgres          (JetStream → PostgreSQL)
#
# Each profile covers the whole benchmark, its raw baseline included (the
# go-redis / SQLite / nats.go client side of it), so read the handler's
# cumulative share. Output: <dir>/<path>-cpu.txt and <path>-alloc.txt.
#
#   scripts/profile.sh [dir] [path…]   only the paths named (lookup sale replay ingest),
#                                      e.g. scripts/profile.sh docs/perf sale
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(cd "${1:-$ROOT/docs/perf}" && pwd)
shift || true
WANT=" ${*:-lookup sale replay ingest} "
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

profile() { # name pkg bench benchtime focus
	local name=$1 pkg=$2 bench=$3 benchtime=$4 focus=$5
	[[ $WANT == *" $name "* ]] || return 0
	echo "profile $name: $pkg $bench -benchtime $benchtime"
	(cd "$ROOT" && go test -c -o "$TMP/$name.test" "./$pkg")
	(cd "$ROOT/$pkg" && "$TMP/$name.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" \
		-test.cpuprofile "$TMP/$name.cpu" -test.memprofile "$TMP/$name.mem" -test.memprofilerate 65536 \
		>"$TMP/$name.bench.txt" 2>&1) || { cat "$TMP/$name.bench.txt"; exit 1; }
	{
		echo "# $name path, CPU: $pkg $bench -benchtime $benchtime, $(date -u +%FT%TZ), $(nproc) CPUs ($(uname -m))"
		grep -E '^(goos|goarch|cpu)|ns/op' "$TMP/$name.bench.txt" || true
		echo
		echo "## the path itself: cumulative, focused on $focus (top 45)"
		go tool pprof -top -cum -focus "$focus" -nodecount 45 "$TMP/$name.test" "$TMP/$name.cpu" 2>/dev/null
		echo
		echo "## flat, whole benchmark (top 35)"
		go tool pprof -top -nodecount 35 "$TMP/$name.test" "$TMP/$name.cpu" 2>/dev/null
		echo
		echo "## cumulative, whole benchmark with its raw baseline and setup (top 45)"
		go tool pprof -top -cum -nodecount 45 "$TMP/$name.test" "$TMP/$name.cpu" 2>/dev/null
	} >"$OUT/$name-cpu.txt"
	{
		echo "# $name path, allocations (alloc_space, alloc_objects): $pkg $bench -benchtime $benchtime, $(date -u +%FT%TZ)"
		echo
		echo "## alloc_space, focused on $focus (top 35)"
		go tool pprof -top -sample_index alloc_space -focus "$focus" -nodecount 35 "$TMP/$name.test" "$TMP/$name.mem" 2>/dev/null
		echo
		echo "## alloc_space, whole benchmark (top 35)"
		go tool pprof -top -sample_index alloc_space -nodecount 35 "$TMP/$name.test" "$TMP/$name.mem" 2>/dev/null
		echo
		echo "## alloc_objects (top 35)"
		go tool pprof -top -sample_index alloc_objects -nodecount 35 "$TMP/$name.test" "$TMP/$name.mem" 2>/dev/null
	} >"$OUT/$name-alloc.txt"
}

profile lookup edge/api '^BenchmarkItemLookupVsRawLimiter$' 20000x 'net/http\.\(\*conn\)\.serve'
profile sale edge/api '^BenchmarkDurableSalesVsRawCommits$' 3000x 'net/http\.\(\*conn\)\.serve|journal\.\(\*Journal\)\.writer'
profile replay sync/replay '^BenchmarkReplayVsRawPublish$' 2x 'replay\.\(\*Replayer\)\.Run'
profile ingest sync/hq '^BenchmarkIngest$/^postgres$' 20000x 'hq\.\(\*Receiver\)\.Run' 
echo "profiles in $OUT"
