#!/usr/bin/env bash
# Photographs the terminal client (`make terminal-screenshot`): `pilotdesk
# chat` on the built-in demo agent in a 96×40 tmux window, asked for its
# markdown reply. Two pictures, drawn from `tmux capture-pane -e` by
# tools/termshot (DejaVu Sans Mono on a dark terminal's colours):
#   terminal-markdown-streaming.png  mid-reply: the finished blocks above,
#                                    the block under way in the footer
#   terminal-markdown.png            the reply rendered whole
# LOOK at them: they are what docs/cli.md (Markdown) describes.
#
#   scripts/terminal-screenshot.sh [OUT_DIR]     default: screenshots
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
scripts/deps.sh terminal

out=${1:-screenshots}
mkdir -p "$out"
tmp=$(mktemp -d /tmp/pilotdesk-terminal-shot.XXXXXX)
sock=pilotdesk-shot-$$
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -tags ci -o "$tmp/pilotdesk" .
go build -o "$tmp/termshot" ./tools/termshot
mkdir -p "$tmp/work" "$tmp/home"
# An empty folder for the demo's turns (it snapshots its workspace), its
# own HOME, colours on.
tmux -L "$sock" -f /dev/null new-session -d -s chat -x 96 -y 40 -c "$tmp/work" \
	"env HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config NO_COLOR= TERM=xterm-256color LANG=en_US.UTF-8 PILOTDESK_TOKEN= $tmp/pilotdesk chat --agent script --data-dir :memory:"

pane() { tmux -L "$sock" capture-pane -p -e -t chat; }
plain() { pane | sed 's/\x1b\[[0-9;]*m//g'; }
wait_for() { # TEXT: wait until the screen shows it (30 s)
	for _ in $(seq 300); do
		plain | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	echo "terminal-screenshot: the screen never showed \"$1\":" >&2
	plain >&2
	exit 1
}

wait_for "act>"
tmux -L "$sock" send-keys -t chat markdown Enter
# Mid-reply: once the quote streams (it comes after the code block), while
# the footer still says "writing…".
streaming=
for _ in $(seq 300); do
	shot=$(pane)
	text=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$shot")
	if grep -qF "A quote" <<<"$text" && grep -qF "writing…" <<<"$text"; then
		streaming=$shot
		break
	fi
	grep -qF "usage:" <<<"$text" && break
	sleep 0.1
done
wait_for "usage:"
if [ -n "$streaming" ]; then
	"$tmp/termshot" -cols 96 -o "$out/terminal-markdown-streaming.png" <<<"$streaming"
	echo "terminal-screenshot: $out/terminal-markdown-streaming.png"
else
	echo "terminal-screenshot: the reply ended before a mid-reply picture was taken; run it again" >&2
fi
pane | "$tmp/termshot" -cols 96 -o "$out/terminal-markdown.png"
echo "terminal-screenshot: $out/terminal-markdown.png"
