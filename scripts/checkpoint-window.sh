#!/usr/bin/env bash
# Pictures of the real GL window's checkpoints and workspaces
# (docs/checkpoints.md, docs/workspaces.md): the binary built with
# `-tags no_emoji` on a virtual X server (Xvfb), the scripted agent editing
# files in a git repository of its own, driven with xdotool:
#   1. sends "edit the notes": the agent rewrites notes.md, adds todo.md
#      and removes old.txt; the turn ends with its changes card;
#   2. opens notes.md's diff in the card  → checkpoint-window-diff.png;
#   3. presses Restore…                   → checkpoint-window-restore.png;
#   4. cancels, presses Ctrl+N            → checkpoint-window-new.png
#      (the new-conversation dialog: the folder, Browse…, the worktree
#      checkbox of a repository).
# It checks what it can without eyes (the files the agent wrote, that
# nothing was restored before the confirmation); LOOK at the pictures. The
# clicks are at the places the window's size (1100×720) puts the card's
# parts: after a layout change, CARD_ONLY=1 photographs the card alone
# (checkpoint-window-card.png) to find them again.
#
#   scripts/checkpoint-window.sh [OUT_DIR]     pictures in OUT_DIR (default: a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="/usr/local/go/bin:$PATH"

scripts/deps.sh window
. scripts/window-lib.sh
win_dirs checkpoint-window "${1:-}"
trap 'win_cleanup; rm -rf /tmp/pilotdesk-shots' EXIT

echo "checkpoint-window: building the GL binary" >&2
bin=$repo/.tools/checkpoint-window
mkdir -p "$bin"
go build -tags no_emoji -o "$bin/pilotdesk" .

win_xvfb

# A repository under a HOME of its own (the embedded relay's root), at a
# path that reads well in the pictures.
home=/tmp/pilotdesk-shots/you
rm -rf "$home"
work=$home/src/api
mkdir -p "$work" "$tmp/data"
printf '# Release notes\n\n- faster start\n- TODO: list the fixes\n' >"$work/notes.md"
printf 'obsolete\n' >"$work/old.txt"
git -C "$work" init -q
git -C "$work" -c user.name=p -c user.email=p@p -c commit.gpgsign=false add -A
git -C "$work" -c user.name=p -c user.email=p@p -c commit.gpgsign=false commit -qm first
cat >"$tmp/script.json" <<'JSON'
{"turns": [{"match": "edit", "steps": [
  {"delta": "Updating the release notes. "},
  {"tool": {"name": "edit", "arguments": {"path": "notes.md"}, "write": {"path": "notes.md", "content": "# Release notes\n\n- faster start\n- the sidebar names each conversation's folder\n- every turn's changes can be reviewed and restored\n"}}},
  {"tool": {"name": "edit", "arguments": {"path": "todo.md"}, "write": {"path": "todo.md", "content": "- tag v1.4\n- publish the notes\n"}}},
  {"tool": {"name": "bash", "arguments": {"command": "rm old.txt"}, "remove": "old.txt"}},
  {"delta": "Done: the notes list the two new features, todo.md has the release steps, and old.txt is gone."}
]}]}
JSON
win_start "$work" HOME="$home" XDG_CONFIG_HOME="$home/.config" "$bin/pilotdesk" --agent script --script "$tmp/script.json" --data-dir "$tmp/data" --verbose

win_find
waitfor "the window's client to connect" 60 logged 'relay: connection opened'
sleep 2
win_send "edit the notes"
waitfor "the agent to remove old.txt" 60 test ! -e "$work/old.txt"
sleep 3
import -window "$win" "$out/checkpoint-window-card.png"
[ -n "${CARD_ONLY:-}" ] && { echo "checkpoint-window: $out/checkpoint-window-card.png" >&2; exit 0; }
click 350 387 1.5 # notes.md in the card: its diff
import -window "$win" "$out/checkpoint-window-diff.png"
click 955 507 1 # Restore files to before this turn…
import -window "$win" "$out/checkpoint-window-restore.png"
test -e "$work/todo.md" || fail "the folder was restored before the confirmation"
click 500 461 0.5 # Cancel
xdotool key ctrl+n
sleep 1.5
import -window "$win" "$out/checkpoint-window-new.png"
echo "checkpoint-window: pictures in $out: LOOK at them" >&2
