#!/bin/sh
# make chaos: the fault-injection suite (docs/reliability.md, Faults). Each
# fault of tools/load -fault runs CHAOS_RUNS times (default 3) on a fresh
# 3-node nats-server cluster on loopback with three relays and streaming
# clients that check every seq (gapless, once, in order, the same bytes as
# every other client) and, at the end, replay every conversation from every
# relay. Each run prints its seed and a VERDICT line; the summary lists
# them all. The exit status is 1 if any run failed. The partitions
# (node-partition, relay-partition, and their -oneway variants, which drop
# the packets one way only) put their victim in a network namespace
# of its own and need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2's
# ip and tc; without them those runs fail saying so.
#
#   CHAOS_FAULTS   the faults to run (default: all of them)
#   CHAOS_RUNS     runs per fault (default 3)
#   CHAOS_FLAGS    more flags for tools/load (e.g. -conns 300 -convs 30)
#   CHAOS_SEED     the first run's seed (default: random; run i adds i)
#   CHAOS_PLACEMENTS the placements the runs take turns at (default:
#                  spread owner)
set -u
cd "$(dirname "$0")/.."
faults=${CHAOS_FAULTS:-"relay-kill relay-stop leader-kill quorum-loss rolling-restart node-partition relay-partition node-partition-oneway relay-partition-oneway"}
runs=${CHAOS_RUNS:-3}
seed=${CHAOS_SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}
placements=${CHAOS_PLACEMENTS:-"spread owner"}
# shellcheck disable=SC2086 # split on purpose
set -- $placements
nplace=$#
out=.tools/chaos
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
status=0
for fault in $faults; do
	i=0
	while [ "$i" -lt "$runs" ]; do
		s=$((seed + i))
		# The (i mod nplace)-th placement: shift in a subshell.
		p=$(shift $((i % nplace)) && echo "$1")
		log="$out/$fault-$s-$p.txt"
		echo "chaos: $fault, run $((i + 1)) of $runs, seed $s, placement $p (output in $log)"
		# shellcheck disable=SC2086 # CHAOS_FLAGS is split on purpose
		.tools/load/load -bin .tools/load/pilotdesk -nats -fault "$fault" -seed "$s" -placement "$p" \
			-conns 120 -convs 24 -duration 90s -deltas 50 ${CHAOS_FLAGS:-} >"$log" 2>"$log.err" || status=1
		v=$(grep '^VERDICT' "$log" || echo "VERDICT $fault seed=$s: FAIL: the run did not finish ($(tail -n 1 "$log.err"))")
		echo "$v (placement $p)" | tee -a "$summary"
		i=$((i + 1))
	done
done
echo "chaos: summary ($summary)"
cat "$summary"
exit "$status"
