#!/usr/bin/env bash
# Runs one stage of `make test` and keeps the time it took, so that a slow
# run says where its time went:
#
#   scripts/stage.sh NAME COMMAND [ARG...]   runs COMMAND as stage NAME
#   scripts/stage.sh --summary               prints every stage's time
#
# The times go to .tools/stages.log (STAGE_LOG overrides), which the first
# stage of a run starts afresh (STAGE_FIRST=1). When the run is stopped from
# outside (SIGTERM or SIGINT, as a CI time limit does), the stage that was
# running stops its command, and the summary is printed with that stage
# marked as cut, so the end of the log names the stage that ran out of time.
set -uo pipefail
cd "$(dirname "$0")/.."
log=${STAGE_LOG:-.tools/stages.log}
mkdir -p "$(dirname "$log")"

summary() {
	echo "make test: time per stage"
	[ -f "$log" ] && awk -F'\t' '{ t += $2; printf "  %-16s %5d s  %s\n", $1, $2, $3 } END { printf "  %-16s %5d s\n", "total", t }' "$log"
}

if [ "${1:-}" = --summary ]; then
	summary
	exit 0
fi
if [ $# -lt 2 ]; then
	echo "usage: scripts/stage.sh NAME COMMAND [ARG...] | --summary" >&2
	exit 2
fi
name=$1
shift
[ "${STAGE_FIRST:-}" = 1 ] && : >"$log"
start=$(date +%s)
total=$(awk -F'\t' '{ t += $2 } END { print t + 0 }' "$log" 2>/dev/null || echo 0)
echo "make test: stage $name (at $((total / 60)) min $((total % 60)) s): $*"

# The command runs in the background so that a signal reaches this shell
# while it waits, and the command is stopped with it.
"$@" &
child=$!
cut() {
	kill -TERM "$child" 2>/dev/null
	wait "$child" 2>/dev/null
	printf '%s\t%d\t%s\n' "$name" "$(($(date +%s) - start))" "CUT: the run was stopped during this stage" >>"$log"
	summary
	exit 143
}
trap cut TERM INT
wait "$child"
rc=$?
printf '%s\t%d\t%s\n' "$name" "$(($(date +%s) - start))" "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")" >>"$log"
if [ $rc != 0 ]; then summary; fi
exit $rc
