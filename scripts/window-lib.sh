# window-lib.sh: what the scripts that photograph the real GL window share
# (device-screenshots.sh, checkpoint-window.sh, acp-window.sh,
# acp-window-agent.sh): a virtual X server, the window found and
# sized, clicks at places of its content, waits that fail with the
# window's log and a picture of the screen. Sourced, not run:
#
#   . scripts/window-lib.sh
#   win_dirs NAME [OUT]      # sets name, a fresh tmp, out (OUT or $tmp/shots)
#   win_xvfb                 # Xvfb on a free display; exports DISPLAY
#   win_mock COMMAND…        # a mock model: sets mock to its URL
#   win_start DIR [NAME=VALUE…] COMMAND…   # the window, in DIR, logging to $tmp/window.log
#   win_find [SECONDS]       # waits for it, 1100×720 at 0,0: sets win, wx, wy
#   click X Y [SECONDS]      # at X, Y of the window's content, then waits
#   win_send TEXT            # types TEXT in the composer and sends it
#   waitfor WHAT SECONDS CMD…, logged PATTERN, fail MESSAGE
#
# Processes added to pids are stopped at exit, the last first (the window
# before its X server: it stops its agent only while its X server lives).

# win_dirs NAME [OUT] names the script (name, in its messages), makes its
# scratch folder (tmp, removed at exit) and the folder of its pictures (out:
# OUT, or shots in tmp when OUT is empty), made and absolute.
win_dirs() {
	name=$1
	tmp=$(mktemp -d "/tmp/pilotdesk-$1.XXXXXX")
	out=${2:-$tmp/shots}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
}

pids=()
win_cleanup() {
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap win_cleanup EXIT

# win_xvfb starts a virtual screen on a display it picks itself.
win_xvfb() {
	exec 3>"$tmp/display"
	Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$tmp/display" ] && break; sleep 0.1; done
	[ -s "$tmp/display" ] || fail "Xvfb did not start: $(cat "$tmp/xvfb.log")"
	export DISPLAY=":$(head -1 "$tmp/display")"
}

# win_mock COMMAND… starts a mock model (one that prints "mock model at
# URL …"), logging to $tmp/mock.log, and sets mock to its URL.
win_mock() {
	"$@" >"$tmp/mock.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do grep -q '^mock model at ' "$tmp/mock.log" && break; sleep 0.1; done
	mock=$(sed -n 's/^mock model at \([^ ]*\) .*/\1/p' "$tmp/mock.log")
	[ -n "$mock" ] || fail "the mock model did not start: $(cat "$tmp/mock.log")"
}

fail() {
	echo "$name: FAILED: $*" >&2
	if [ -f "$tmp/window.log" ]; then
		echo "--- the window's log:" >&2
		tail -40 "$tmp/window.log" >&2
	fi
	if [ -n "${DISPLAY:-}" ] && import -window root "$out/$name-failed.png" 2>/dev/null; then
		echo "$name: the screen is in $out/$name-failed.png" >&2
	fi
	exit 1
}

# waitfor WHAT SECONDS COMMAND...: polls COMMAND each 0.5 s.
waitfor() {
	local what=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 2))); do "$@" && return 0; sleep 0.5; done
	fail "$what (waited $secs s)"
}

logged() { grep -q "$1" "$tmp/window.log"; }

# win_start DIR [NAME=VALUE…] COMMAND…: runs COMMAND (the window) in DIR
# with those variables set, in the background, logging to
# $tmp/window.log (what logged and fail read); it is stopped at exit.
win_start() {
	local dir=$1
	shift
	(
		cd "$dir"
		exec env "$@"
	) >"$tmp/window.log" 2>&1 &
	pids+=($!)
}

# win_find [SECONDS] waits for the window (60 s unless told), puts it at
# 0,0 in the size the clicks of the scripts are measured in, and focuses
# it.
win_find() {
	waitfor "the window to open" "${1:-60}" xdotool search --name '^pilotdesk' >/dev/null
	win=$(xdotool search --name '^pilotdesk' | head -1)
	xdotool windowsize "$win" 1100 720 windowmove "$win" 0 0
	sleep 1
	xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus "$win"
	wx=$(xwininfo -id "$win" | sed -n 's/.*Absolute upper-left X: *//p')
	wy=$(xwininfo -id "$win" | sed -n 's/.*Absolute upper-left Y: *//p')
}

# click X Y [SECONDS]: at X, Y of the window's content, then a pause for
# the window to draw what follows.
click() { xdotool mousemove $((wx + $1)) $((wy + $2)) click 1; sleep "${3:-0.8}"; }

# win_send TEXT: types TEXT in the composer (where the window's size puts
# it) and sends it with Return.
win_send() {
	click 600 610 0.3
	xdotool type --delay 15 "$1"
	xdotool key Return
}
