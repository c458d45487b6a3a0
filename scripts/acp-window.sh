#!/usr/bin/env bash
# The window on a real ACP agent, end to end (`make acp-window`): the real
# GL binary on a virtual X server (Xvfb), opencode from npm (`opencode acp`, installed as `make test`
# installs it) talking to the project's mock model (mock-openai) offline, by
# environment only (HOME, OPENCODE_CONFIG_CONTENT), as
# session/acp/realagent_test.go configures it.
#
# What it does, as a user would, with xdotool:
#   1. starts pilotdesk with an empty profile (its own HOME) and a data dir;
#      opencode is on PATH, so Settings offers it;
#   2. opens Settings (Ctrl+,), picks "opencode acp" in the ACP agent's list
#      (which selects "An ACP agent"), photographs the dialog, and applies:
#      the embedded relay restarts on opencode;
#   3. sends "edit: notes.txt: TWO => two": the mock model has opencode read
#      notes.txt and edit it (opencode asks, Act allows);
#   4. opens the edit's tool row and photographs the window: the reply, the
#      tool rows, the diff, the sidebar's "idle · OpenCode (ACP)". Xvfb has
#      no window manager, so no title bar: the title ("… · OpenCode (ACP)")
#      is read with xdotool, printed and checked.
# It checks what it can without eyes (the saved settings, the restarted
# relay's agent, the file's new text, the window's title) and fails when
# one is wrong; LOOK at the pictures. The clicks are at the places the
# window's default size (1100×720) puts Settings' ACP agent list, Apply, the
# composer and the tool row's toggle: after a layout change, check the
# pictures (acp-window-settings.png shows where the first clicks land).
#
#   scripts/acp-window.sh [OUT_DIR]     pictures in OUT_DIR (default: a temp dir)
#   PILOTDESK_OPENCODE_PATH=…/opencode scripts/acp-window.sh   that opencode
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="/usr/local/go/bin:$PATH"

scripts/deps.sh window
# $PILOTDESK_OPENCODE_PATH, as for the tests, else the one make test installs.
opencode=${PILOTDESK_OPENCODE_PATH:-$(scripts/install-opencode.sh | tail -1)}
[ -x "$opencode" ] || { echo "acp-window: opencode could not be installed (see above)" >&2; exit 1; }

. scripts/window-lib.sh
win_dirs acp-window "${1:-}"

echo "acp-window: building the GL binary and the mock model" >&2
bin=$repo/.tools/acp-window
mkdir -p "$bin"
go build -tags no_emoji -o "$bin/pilotdesk" .
go build -o "$bin/mock-openai" ./session/copilot/mockopenai/cmd/mock-openai

# The mock model on a free loopback port.
win_mock "$bin/mock-openai" -listen 127.0.0.1:0

# A virtual screen.
win_xvfb

# opencode offline against the mock, configured by environment only; its
# own files under a HOME of its own (so are pilotdesk's preferences).
home=$tmp/home
mkdir -p "$home" "$tmp/work" "$tmp/data"
printf 'one\nTWO\nthree\n' >"$tmp/work/notes.txt"
config=$(printf '{"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"%s","apiKey":"mock-key"},"models":{"gpt-4.1":{"name":"gpt-4.1","tool_call":true}}}},"model":"mock/gpt-4.1","small_model":"mock/gpt-4.1","permission":{"bash":"ask","edit":"ask","webfetch":"ask"},"autoupdate":false,"share":"disabled"}' "$mock")
win_start "$tmp/work" HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share" \
	XDG_CACHE_HOME="$home/.cache" XDG_STATE_HOME="$home/.local/state" \
	OPENCODE_CONFIG_CONTENT="$config" OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
	OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 \
	npm_config_offline=true PATH="$(dirname "$opencode"):$PATH" \
	"$bin/pilotdesk" --data-dir "$tmp/data" --verbose

win_find
waitfor "the embedded relay to start" 60 logged 'msg="agent: '
sleep 2

# Settings → the ACP agent's list → "opencode acp" → Apply.
xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus "$win"
xdotool key --window "$win" ctrl+comma
sleep 1.5
click 528 235 # the ACP agent list's button
click 260 270 # its first entry: opencode acp (the only agent on PATH)
import -window "$win" "$out/acp-window-settings.png"
click 595 670 0.5 # Apply
prefs=$home/.config/pilotdesk/preferences.json
saved() { grep -q '"settings.acpCommand":"opencode acp"' "$prefs" && grep -q '"settings.agent":"acp"' "$prefs"; }
waitfor "Settings to save the ACP agent opencode acp" 20 saved
waitfor "the relay to restart on opencode" 120 logged 'msg="agent: acp" command="opencode acp"'
sleep 2

# A prompt that makes the mock model have opencode edit notes.txt.
win_send "edit: notes.txt: TWO => two"
waitfor "opencode to edit notes.txt" 120 grep -qx two "$tmp/work/notes.txt"
sleep 4 # the reply after the tool, and the turn's end
click 1053 210 0.5 # dismiss the notice of the restart
click 1077 296    # open the edit's tool row: its diff
import -window "$win" "$out/acp-window-opencode.png"
title=$(xdotool getwindowname "$win")
echo "acp-window: the window's title: $title" >&2
case $title in *"OpenCode (ACP)"*) ;; *) fail "the title does not name OpenCode (ACP): $title" ;; esac
echo "acp-window: pictures in $out (acp-window-settings.png, acp-window-opencode.png): LOOK at them" >&2
