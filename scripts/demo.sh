#!/usr/bin/env bash
# make demo: one whole store on loopback under ./.demo/ — a Redis master,
# two replicas and three Sentinels, NATS with JetStream, posedge-hq and
# posedge — then simulated terminals selling for a while, then
# `posedge status` and what reached HQ.
#
#   DEMO_DURATION=20s   how long the terminals sell
#   DEMO_RATE=2         sales per second per terminal
#   DEMO_KEEP=1         keep everything running until Ctrl-C: a practice
#                       store (docs/practice.md); a process that stops is a
#                       fault to observe, not a reason to stop the demo
#
# While DEMO_KEEP=1 runs, from another shell:
#   scripts/demo.sh fault kill-master   kill the Redis master (Sentinel fails over)
#   scripts/demo.sh fault stop-redis    kill every Redis server (degraded mode)
#   scripts/demo.sh fault freeze-redis  SIGSTOP every Redis server (hangs, then degraded mode)
#   scripts/demo.sh fault wan-down      kill NATS (HQ unreachable, backlog grows)
#   scripts/demo.sh fault wan-up        start NATS again (as heal)
#   scripts/demo.sh fault heal          restart (or continue) whatever stopped
#   scripts/demo.sh stop                stop what an earlier demo left running
#
# Redis and Sentinel run from copies of configs/ under .demo/ (Redis and
# Sentinel rewrite their config files), so the tree stays clean.
# Ctrl-C stops everything the script started. Logs: .demo/logs/.

# Functions called through traps and wait_for look unused to shellcheck.
# shellcheck disable=SC2317
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.demo
BIN=$ROOT/bin
LOGS=$D/logs
DURATION=${DEMO_DURATION:-20s}
RATE=${DEMO_RATE:-2}

# Fixed ports away from the system defaults (6379, 26379, 4222, 8080).
REDIS_PORTS=(16379 16380 16381)
# All below 32768, the start of Linux's ephemeral range: a port in it can be
# taken by any outgoing connection's local end (a Sentinel on 36380 once
# failed to bind so while tests ran beside the demo).
SENTINEL_PORTS=(16479 16480 16481)
NATS_PORT=14222
EDGE_PORT=18080
ADMIN_PORT=18081
HQ_ADMIN_PORT=18090
STORE_ID=DEMO01
TERMINALS=(T01 T02 T03 T04)

export PATH=$PATH:/usr/local/go/bin

say() { printf '\n==> %s\n' "$*"; }
die() {
	printf '\ndemo: %s\n' "$*" >&2
	exit 1
}

# --- processes ---------------------------------------------------------

PIDS=()  # in start order; each is the id of its own process group
NAMES=()
CMDS=()  # each process's command line, quoted, to start it again on heal

# start NAME CMD...: runs CMD in a session of its own, so that Ctrl-C
# reaches only this script, which then stops everything in order.
# Output goes to .demo/logs/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
	PIDS+=("$!")
	NAMES+=("$name")
	CMDS+=("$(printf '%q ' "$@")")
	echo "$!" >>"$D/pids"
	echo "$!" >"$D/pid.$name"
}

# restart I: starts process I again with its command line (heal).
restart() {
	local i=$1
	# As in start: setsid itself in the background, so that $! is the id
	# of the new process group (eval ... & would be a subshell's).
	eval "set -- ${CMDS[i]}"
	setsid "$@" >>"$LOGS/${NAMES[i]}.log" 2>&1 </dev/null &
	PIDS[i]=$!
	echo "$!" >>"$D/pids"
	echo "$!" >"$D/pid.${NAMES[i]}"
}

# stop_group PID: TERM to the process group, KILL after 5 s.
stop_group() {
	local i
	kill -TERM -- "-$1" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 -- "-$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL -- "-$1" 2>/dev/null || true
}

cleanup() {
	trap - EXIT INT TERM
	[ ${#PIDS[@]} -gt 0 ] || return 0
	say "stopping what the demo started"
	local i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do # posedge first, Redis last
		stop_group "${PIDS[i]}"
	done
	rm -f "$D/pids"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A previous run killed with SIGKILL leaves its processes behind: stop
# those it recorded (if they still look like ours).
stop_leftovers() {
	[ -f "$D/pids" ] || return 0
	local pid
	while read -r pid; do
		if grep -qaE 'redis|nats|posedge' "/proc/$pid/cmdline" 2>/dev/null; then
			echo "stopping leftover process group $pid of an earlier demo"
			stop_group "$pid"
		fi
	done <"$D/pids"
	rm -f "$D/pids"
}

# check_alive: dies naming the first started process that has exited.
check_alive() {
	local i
	for i in "${!PIDS[@]}"; do
		if ! kill -0 "${PIDS[i]}" 2>/dev/null; then
			echo "--- last lines of $LOGS/${NAMES[i]}.log:" >&2
			tail -n 20 "$LOGS/${NAMES[i]}.log" >&2 || true
			die "${NAMES[i]} exited"
		fi
	done
}

# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		check_alive
		[ $SECONDS -lt $deadline ] || die "timed out waiting for $what (logs in $LOGS)"
		sleep 0.2
	done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# http_ok PORT PATH: GET answers 200 (bash only: curl may be missing).
http_ok() (
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
	read -r -t 2 _ code _ <&3 || exit 1
	[ "$code" = 200 ]
)

# --- what the machine needs --------------------------------------------

install_missing() {
	local pkgs=() sudo=()
	command -v redis-server >/dev/null || pkgs+=(redis-server)
	command -v redis-sentinel >/dev/null || pkgs+=(redis-sentinel)
	command -v redis-cli >/dev/null || pkgs+=(redis-tools)
	command -v go >/dev/null || die "Go is needed: https://go.dev/doc/install (or /usr/local/go/bin on PATH)"
	[ ${#pkgs[@]} -gt 0 ] || return 0
	command -v apt-get >/dev/null || die "please install ${pkgs[*]} (Redis 7)"
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null || die "run as root, or install: apt-get install ${pkgs[*]}"
		sudo=(sudo)
	fi
	say "installing ${pkgs[*]}"
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"
	# Debian starts the packages' system services; the demo has its own.
	local p
	for p in "${pkgs[@]}"; do
		[ "$p" = redis-tools ] || "${sudo[@]}" service "$p" stop >/dev/null 2>&1 || true
	done
}

# --- the store -----------------------------------------------------------

start_redis() {
	local i conf
	for i in 0 1 2; do
		mkdir -p "$D/redis$i"
		conf=redis-replica.conf
		[ $i -gt 0 ] || conf=redis-master.conf
		# A copy of the shipped config with the demo's port and paths: Redis
		# rewrites the file it was started from (CONFIG REWRITE after a
		# failover), which must never be a tracked file; on heal the node
		# starts again from what Sentinel last wrote there.
		sed -e "s/^port .*/port ${REDIS_PORTS[i]}/" \
			-e "s/^bind .*/bind 127.0.0.1/" \
			-e "s|^pidfile .*|pidfile $D/redis$i/redis.pid|" \
			-e 's|^logfile .*|logfile ""|' \
			-e "s|^dir .*|dir $D/redis$i|" \
			-e "s/^replicaof .*/replicaof 127.0.0.1 ${REDIS_PORTS[0]}/" \
			"$ROOT/configs/$conf" >"$D/redis$i/redis.conf"
		grep -q "^port ${REDIS_PORTS[i]}\$" "$D/redis$i/redis.conf" ||
			die "configs/$conf: no 'port' line to adapt"
		start "redis$i" redis-server "$D/redis$i/redis.conf"
		wait_for 10 "redis$i" redis-cli -p "${REDIS_PORTS[i]}" ping
	done
	wait_for 20 "both replicas in sync" replicas_online
	for i in 0 1 2; do
		sed -e "s/^port .*/port ${SENTINEL_PORTS[i]}/" \
			-e "s|^pidfile .*|pidfile $D/sentinel$i.pid|" \
			-e 's|^logfile .*|logfile ""|' \
			-e "s|^dir .*|dir $D|" \
			-e "s/^sentinel monitor posedge \([^ ]*\) [0-9]* /sentinel monitor posedge 127.0.0.1 ${REDIS_PORTS[0]} /" \
			"$ROOT/configs/sentinel.conf" >"$D/sentinel$i.conf"
		grep -q "^sentinel monitor posedge 127.0.0.1 ${REDIS_PORTS[0]} 2" "$D/sentinel$i.conf" ||
			die "configs/sentinel.conf: no 'sentinel monitor posedge HOST PORT 2' line to adapt"
		start "sentinel$i" redis-sentinel "$D/sentinel$i.conf"
	done
	wait_for 30 "the Sentinels to see the master, 2 replicas and each other" sentinels_agree
}

replicas_online() {
	[ "$(redis-cli -p "${REDIS_PORTS[0]}" info replication | grep -c 'state=online')" -eq 2 ]
}

sentinels_agree() {
	local p
	for p in "${SENTINEL_PORTS[@]}"; do
		redis-cli -p "$p" info sentinel | grep -q 'name=posedge,status=ok,.*slaves=2,sentinels=3' || return 1
	done
}

start_nats() {
	start nats "$D/bin/nats-server" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$D/jetstream"
	wait_for 10 "NATS" port_open "$NATS_PORT"
}

start_hq() {
	cat >"$D/hq.yaml" <<-EOF
		nats_url: "nats://127.0.0.1:$NATS_PORT"
		stream: "POS_TXN"
		subject_prefix: "pos.txn"
		database: "sqlite://$D/hq.db"
		admin:
		  listen: "127.0.0.1:$HQ_ADMIN_PORT"
	EOF
	start posedge-hq "$BIN/posedge-hq" run --config "$D/hq.yaml"
	wait_for 20 "posedge-hq /healthz" http_ok "$HQ_ADMIN_PORT" /healthz
}

# write_edge_config: four terminals with fresh keys (kept in .demo/keys).
write_edge_config() {
	local t key terms="" keys=""
	for t in "${TERMINALS[@]}"; do
		key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
		keys+="${keys:+,}$t=$key"
		terms+="  - id: \"$t\"
    key_sha256: \"$(printf %s "$key" | sha256sum | cut -d' ' -f1)\"
"
	done
	echo "$keys" >"$D/keys"
	cat >"$D/posedge.yaml" <<-EOF
		# Written by scripts/demo.sh; see configs/posedge.example.yaml for every key.
		store_id: "$STORE_ID"
		listen: "127.0.0.1:$EDGE_PORT"
		admin:
		  listen: "127.0.0.1:$ADMIN_PORT"
		redis:
		  sentinels: ["127.0.0.1:${SENTINEL_PORTS[0]}", "127.0.0.1:${SENTINEL_PORTS[1]}", "127.0.0.1:${SENTINEL_PORTS[2]}"]
		  master_name: "posedge"
		  replicas: 2
		  min_replicas_ack: 1
		journal:
		  path: "$D/journal.db"
		  # a dev machine's disk: do not warn about free space
		  warn_free_bytes: 0
		  crit_free_bytes: 0
		hq:
		  nats_url: "nats://127.0.0.1:$NATS_PORT"
		  subject_prefix: "pos.txn"
		terminals:
	EOF
	printf '%s' "$terms" >>"$D/posedge.yaml"
}

start_edge() {
	write_edge_config
	"$BIN/posedge" check-config --config "$D/posedge.yaml" >"$LOGS/check-config.log" 2>&1 || {
		cat "$LOGS/check-config.log" >&2
		die "posedge check-config rejected $D/posedge.yaml"
	}
	start posedge "$BIN/posedge" run --config "$D/posedge.yaml"
	wait_for 30 "posedge /readyz" http_ok "$ADMIN_PORT" /readyz
}

hq_count() { "$D/bin/hqcount" "$D/hq.db" | awk -v k="$1" '$1 == k {print $2}'; }

# --- practice: faults -------------------------------------------------------

# keep_running: a stopped process is a fault being practised: say so once,
# and start it again when `scripts/demo.sh fault heal` asks.
keep_running() {
	local i down=()
	rm -f "$D/heal"
	while :; do
		sleep 1
		for i in "${!PIDS[@]}"; do
			if kill -0 "${PIDS[i]}" 2>/dev/null; then
				[ -z "${down[i]:-}" ] || echo "$(date +%T) ${NAMES[i]} is running again"
				down[i]=""
			elif [ -z "${down[i]:-}" ]; then
				down[i]=1
				echo "$(date +%T) ${NAMES[i]} stopped (scripts/demo.sh fault heal starts it again; log $LOGS/${NAMES[i]}.log)"
			fi
		done
		if [ -f "$D/heal" ]; then
			rm -f "$D/heal"
			for i in "${!PIDS[@]}"; do
				if ! kill -0 "${PIDS[i]}" 2>/dev/null; then
					echo "$(date +%T) heal: starting ${NAMES[i]} again"
					restart "$i"
				fi
			done
			# A frozen (SIGSTOP) process continues.
			for i in "${!PIDS[@]}"; do
				kill -CONT -- "-${PIDS[i]}" 2>/dev/null || true
			done
		fi
	done
}

redis_pid() { cat "$D/redis$1/redis.pid" 2>/dev/null; }

# fault NAME: run from another shell while `DEMO_KEEP=1 make demo` runs.
fault() {
	[ -f "$D/pids" ] || die "no demo is running (start one with: DEMO_KEEP=1 make demo)"
	local i port pid
	case "${1:-}" in
	kill-master)
		port=$(redis-cli -p "${SENTINEL_PORTS[0]}" sentinel get-master-addr-by-name posedge | sed -n 2p)
		for i in 0 1 2; do
			[ "${REDIS_PORTS[i]}" = "$port" ] || continue
			pid=$(redis_pid "$i") || die "no pid file for redis$i"
			kill -KILL "$pid"
			echo "killed the Redis master redis$i (:$port, pid $pid); Sentinel promotes a replica within a few seconds"
			return 0
		done
		die "Sentinel names master port '${port:-?}', not one of the demo's"
		;;
	stop-redis)
		for i in 0 1 2; do
			pid=$(redis_pid "$i") && kill -KILL "$pid" 2>/dev/null && echo "killed redis$i (:${REDIS_PORTS[i]})"
		done
		echo "every Redis server is down: posedge is in degraded mode"
		;;
	freeze-redis)
		for i in 0 1 2; do
			pid=$(redis_pid "$i") && kill -STOP "$pid" && echo "froze redis$i (:${REDIS_PORTS[i]})"
		done
		echo "every Redis server is frozen (answers nothing): posedge times out into degraded mode"
		;;
	wan-down)
		pid=$(cat "$D/pid.nats") && kill -TERM "$pid" 2>/dev/null || die "NATS is not running"
		echo "stopped NATS (pid $pid): HQ is unreachable, the backlog grows"
		;;
	heal | wan-up)
		touch "$D/heal"
		echo "asked the demo to start again (and continue) whatever stopped; watch its terminal"
		;;
	*) die "usage: scripts/demo.sh fault kill-master|stop-redis|freeze-redis|wan-down|wan-up|heal" ;;
	esac
}

# --- main ---------------------------------------------------------------

case "${1:-}" in
fault)
	shift
	fault "$@"
	exit 0
	;;
stop) # make clean: stop what a demo killed with SIGKILL left running
	stop_leftovers
	exit 0
	;;
esac

cd "$ROOT"
mkdir -p "$D"
stop_leftovers
for port in "${REDIS_PORTS[@]}" "${SENTINEL_PORTS[@]}" "$NATS_PORT" "$EDGE_PORT" "$ADMIN_PORT" "$HQ_ADMIN_PORT"; do
	! port_open "$port" || die "port $port on 127.0.0.1 is in use (another demo still running?)"
done
install_missing

say "building"
make --no-print-directory build
go build -o "$D/bin/nats-server" github.com/nats-io/nats-server/v2
go build -o "$D/bin/hqcount" ./scripts/hqcount

# Every run starts from an empty store and an empty HQ.
find "$D" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
mkdir -p "$LOGS"

say "starting Redis (master :${REDIS_PORTS[0]}, replicas :${REDIS_PORTS[1]} :${REDIS_PORTS[2]}) and Sentinels (:${SENTINEL_PORTS[*]})"
start_redis
say "starting NATS with JetStream (:$NATS_PORT)"
start_nats
say "starting posedge-hq (admin :$HQ_ADMIN_PORT, database $D/hq.db)"
start_hq
say "starting posedge (terminals :$EDGE_PORT, admin :$ADMIN_PORT)"
start_edge

say "${#TERMINALS[@]} terminals selling for $DURATION"
sim_rc=0
# tee ignores Ctrl-C, so that the simulator's summary still gets printed.
"$BIN/posedge-sim" --url "http://127.0.0.1:$EDGE_PORT" --admin "http://127.0.0.1:$ADMIN_PORT" \
	--keys "$(cat "$D/keys")" --duration "$DURATION" --rate "$RATE" --seed-items 20 2>&1 |
	(trap '' INT && exec tee "$LOGS/sim.txt") || sim_rc=$?
[ "$sim_rc" -ne 130 ] || exit 130 # Ctrl-C
sold=$(awk '$1 == "sales" && $2 == "ok" {print $3}' "$LOGS/sim.txt")
sold_cents=$(awk '$1 == "total" && $2 == "cents" {print $3}' "$LOGS/sim.txt")

say "waiting for HQ to hold the ${sold:-?} sales"
deadline=$((SECONDS + 30))
while [ "$(hq_count transactions 2>/dev/null || echo -1)" != "${sold:-0}" ] && [ $SECONDS -lt $deadline ]; do
	check_alive
	sleep 0.5
done

say "posedge status --config .demo/posedge.yaml"
status_rc=0
"$BIN/posedge" status --config "$D/posedge.yaml" || status_rc=$?
echo "(exit $status_rc: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN)"

held=$(hq_count transactions || echo "?")
held_cents=$(hq_count net_cents || echo "?")
say "HQ ($D/hq.db): $held transactions, $held_cents cents"
rc=0
if [ "$sim_rc" -eq 0 ] && [ "$held" = "$sold" ] && [ "$held_cents" = "$sold_cents" ]; then
	echo "every sale answered 201 reached HQ exactly once ($sold sales, $sold_cents cents)"
else
	echo "MISMATCH: terminals made ${sold:-?} sales for ${sold_cents:-?} cents (simulator exit $sim_rc); logs in $LOGS" >&2
	rc=1
fi

if [ "${DEMO_KEEP:-}" = 1 ]; then
	say "still running (DEMO_KEEP=1); Ctrl-C stops everything"
	cat <<-EOF
		  terminal API  http://127.0.0.1:$EDGE_PORT   (keys: $D/keys)
		  admin API     http://127.0.0.1:$ADMIN_PORT/admin/v1/stats/daily
		  metrics       http://127.0.0.1:$ADMIN_PORT/metrics
		  HQ admin      http://127.0.0.1:$HQ_ADMIN_PORT/healthz
		  status        $BIN/posedge status --config $D/posedge.yaml
		  more sales    $BIN/posedge-sim --url http://127.0.0.1:$EDGE_PORT --admin http://127.0.0.1:$ADMIN_PORT --keys \$(cat $D/keys)
		  logs          $LOGS/
	EOF
	keep_running
fi
exit $rc
