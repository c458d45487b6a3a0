#!/usr/bin/env bash
# Starts the real GL window (the binary `make build` made) on a virtual X
# server with the demo agent, waits until the window's client is connected
# to the embedded relay started behind it, and quits it with SIGTERM as
# logging out does. Fails if it logged a Fyne error or a failed preload of
# the OpenGL driver (internal/glpreload), or did not exit cleanly.
#
#   scripts/check-window.sh ./pilotdesk
set -euo pipefail
bin=${1:?the pilotdesk binary}
fail() {
	echo "check-window: $*" >&2
	[ -s "${tmp:-}/log" ] && sed 's/^/  | /' "$tmp/log" >&2
	exit 1
}
command -v Xvfb >/dev/null || fail "Xvfb is not installed (scripts/deps.sh installs it)"

tmp=$(mktemp -d)
xvfb=
app=
cleanup() {
	[ -n "$app" ] && kill -KILL "$app" 2>/dev/null || true
	[ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# Xvfb picks a free display and says which on fd 3.
mkfifo "$tmp/display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$tmp/display" >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
read -r -t 20 display <"$tmp/display" || fail "Xvfb did not start: $(cat "$tmp/xvfb.log")"

# Its preferences (window size, settings) go to a config dir of its own,
# not the user's.
DISPLAY=":$display" XDG_CONFIG_HOME="$tmp/config" "$bin" --verbose --agent script --data-dir "$tmp/data" >"$tmp/out" 2>"$tmp/log" &
app=$!
for _ in $(seq 200); do
	grep -q 'relay: connection opened' "$tmp/log" && break
	kill -0 "$app" 2>/dev/null || fail "the window exited while starting"
	sleep 0.1
done
grep -q 'relay: connection opened' "$tmp/log" || fail "the window's client did not connect to the embedded relay within 20 s"

# A new size is saved in the preferences as the window closes: the quit
# writes them (Fyne's own preference store, no longer used, could log
# "Preferences load error" then).
if command -v xdotool >/dev/null; then
	win=$(DISPLAY=":$display" xdotool search --name '^pilotdesk' 2>/dev/null | head -1 || true)
	[ -n "$win" ] && DISPLAY=":$display" xdotool windowsize "$win" 1000 650 2>/dev/null || true
	sleep 0.5
fi
kill -TERM "$app"
for _ in $(seq 100); do
	kill -0 "$app" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$app" 2>/dev/null && fail "the window did not exit within 10 s of SIGTERM"
status=0
wait "$app" || status=$?
app=
[ "$status" = 0 ] || fail "the window exited with status $status after SIGTERM"
errors=$(grep 'Fyne error' "$tmp/log" || true)
if [ -n "$errors" ]; then fail "Fyne logged errors"; fi
if grep -q 'preloading the OpenGL driver failed' "$tmp/log"; then fail "the OpenGL driver's preload failed"; fi
preload=$(grep -o 'preloaded the OpenGL driver" path=[^ ]*' "$tmp/log" | sed 's/.*path=//' || true)
[ -s "$tmp/config/pilotdesk/preferences.json" ] || fail "no preferences file in the config dir after the quit"
echo "check-window: ok: the GL window started on Xvfb :$display, its client connected to the embedded relay, it quit cleanly on SIGTERM, no Fyne error, preferences saved; OpenGL driver preloaded: ${preload:-none (no Mesa driver found)}"
