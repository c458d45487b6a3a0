#!/usr/bin/env bash
# The real window on Claude Code or Codex, end to end and offline: the GL
# binary on a virtual X server (Xvfb), started with `--agent acp` on
# claude-agent-acp or codex-acp (installed as `make test` installs them),
# the agent talking to the project's mock model (internal/mockmodel's
# mock-model: Anthropic Messages for Claude, OpenAI Responses for Codex).
# It sends "Write the file hello.", for which the mock model has the agent
# run `echo written > hello.txt` (the agent asks, Act allows), waits for the
# file, and photographs the window: screenshots/acp-window-AGENT.png, with
# the tool row named by its command. Look at it.
#
# Usage: scripts/acp-window-agent.sh claude|codex [OUTDIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
agent=${1:?usage: scripts/acp-window-agent.sh claude|codex [OUTDIR]}
for tool in Xvfb xdotool xwininfo import; do
	command -v "$tool" >/dev/null || { echo "acp-window-agent: $tool is not installed" >&2; exit 1; }
done
case $agent in
claude) exe=$(scripts/install-claude-acp.sh | tail -1) command=claude-agent-acp label="Claude Agent (ACP)" ;;
codex) exe=$(scripts/install-codex-acp.sh | tail -1) command=codex-acp label="Codex (ACP)" ;;
*) echo "acp-window-agent: claude or codex, not $agent" >&2; exit 2 ;;
esac

tmp=$(mktemp -d /tmp/pilotdesk-acp-window.XXXXXX)
out=${2:-$tmp/shots}
mkdir -p "$out"
out=$(cd "$out" && pwd)
pids=()
cleanup() {
	# One at a time, the window first: it stops its agent only while its X
	# server lives (an X server gone under it ends it at once, and an ACP
	# agent with a session open, such as Claude Code's, outlives it).
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "acp-window-agent: building the GL binary and the mock model" >&2
bin=$repo/.tools/acp-window
mkdir -p "$bin"
[ -n "${PILOTDESK_BIN:-}" ] || go build -tags no_emoji -o "$bin/pilotdesk" .
pilotdesk=${PILOTDESK_BIN:-$bin/pilotdesk}
go build -o "$bin/mock-model" ./internal/mockmodel/cmd/mock-model

"$bin/mock-model" >"$tmp/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q '^mock model at ' "$tmp/mock.log" && break; sleep 0.1; done
mock=$(sed -n 's/^mock model at \([^ ]*\) .*/\1/p' "$tmp/mock.log")
[ -n "$mock" ] || { echo "acp-window-agent: the mock model did not start:" >&2; cat "$tmp/mock.log" >&2; exit 1; }

exec 3>"$tmp/display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -s "$tmp/display" ] && break; sleep 0.1; done
export DISPLAY=":$(head -1 "$tmp/display")"

home=$tmp/home
mkdir -p "$home" "$tmp/work" "$tmp/data"
env=(HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" PATH="$(dirname "$exe"):$PATH")
case $agent in
claude)
	env+=(ANTHROPIC_BASE_URL="$mock" ANTHROPIC_API_KEY=mock-key ANTHROPIC_MODEL=claude-sonnet-4-5
		ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5 CLAUDE_CONFIG_DIR="$home/.claude"
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1)
	;;
codex)
	mkdir -p "$home/codex"
	cat >"$home/codex/config.toml" <<TOML
model = "gpt-5.4"
model_provider = "mock"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "Mock"
base_url = "$mock/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
TOML
	env+=(CODEX_HOME="$home/codex" MOCK_API_KEY=mock-key)
	;;
esac
(
	cd "$tmp/work"
	exec env "${env[@]}" "$pilotdesk" --agent acp --acp-command "$command" --workdir "$tmp/work" --data-dir "$tmp/data" --verbose
) >"$tmp/window.log" 2>&1 &
pids+=($!)

fail() {
	echo "acp-window-agent: FAILED: $*" >&2
	echo "--- the window's log:" >&2
	tail -40 "$tmp/window.log" >&2
	import -window root "$out/acp-window-$agent-failed.png" 2>/dev/null && echo "acp-window-agent: the screen is in $out/acp-window-$agent-failed.png" >&2
	exit 1
}
waitfor() {
	local what=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 2))); do "$@" && return 0; sleep 0.5; done
	fail "$what (waited $secs s)"
}
logged() { grep -q "$1" "$tmp/window.log"; }

waitfor "the window to open" 120 xdotool search --name '^pilotdesk' >/dev/null
win=$(xdotool search --name '^pilotdesk' | head -1)
xdotool windowsize "$win" 1100 720 windowmove "$win" 0 0
waitfor "the embedded relay to start on $command" 180 logged 'msg="agent: acp"'
sleep 2
xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus "$win"
wx=$(xwininfo -id "$win" | sed -n 's/.*Absolute upper-left X: *//p')
wy=$(xwininfo -id "$win" | sed -n 's/.*Absolute upper-left Y: *//p')
click() { xdotool mousemove $((wx + $1)) $((wy + $2)) click 1; sleep "${3:-0.8}"; }
click 600 610 0.3 # the composer
xdotool type --delay 15 "Write the file hello."
xdotool key Return
waitfor "$command to write hello.txt" 240 test -s "$tmp/work/hello.txt"
sleep 6 # the reply after the tool, and the turn's end
import -window "$win" "$out/acp-window-$agent.png"
title=$(xdotool getwindowname "$win")
echo "acp-window-agent: the window's title: $title" >&2
case $title in *"$label"*) ;; *) fail "the title does not name $label: $title" ;; esac
echo "acp-window-agent: the picture is $out/acp-window-$agent.png: LOOK at it" >&2
