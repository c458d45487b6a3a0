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

. scripts/window-lib.sh
win_dirs "acp-window-$agent" "${2:-}"

echo "acp-window-agent: building the GL binary and the mock model" >&2
bin=$repo/.tools/acp-window
mkdir -p "$bin"
[ -n "${PILOTDESK_BIN:-}" ] || go build -tags no_emoji -o "$bin/pilotdesk" .
pilotdesk=${PILOTDESK_BIN:-$bin/pilotdesk}
go build -o "$bin/mock-model" ./internal/mockmodel/cmd/mock-model

win_mock "$bin/mock-model"

win_xvfb

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
win_start "$tmp/work" "${env[@]}" "$pilotdesk" --agent acp --acp-command "$command" --workdir "$tmp/work" --data-dir "$tmp/data" --verbose
win_find 120
waitfor "the embedded relay to start on $command" 180 logged 'msg="agent: acp"'
sleep 2
win_send "Write the file hello."
waitfor "$command to write hello.txt" 240 test -s "$tmp/work/hello.txt"
sleep 6 # the reply after the tool, and the turn's end
import -window "$win" "$out/acp-window-$agent.png"
title=$(xdotool getwindowname "$win")
echo "acp-window-agent: the window's title: $title" >&2
case $title in *"$label"*) ;; *) fail "the title does not name $label: $title" ;; esac
echo "acp-window-agent: the picture is $out/acp-window-$agent.png: LOOK at it" >&2
