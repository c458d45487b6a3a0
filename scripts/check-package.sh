#!/usr/bin/env bash
# Checks the Linux package that `make package` built: it unpacks it, runs the
# packaged binary's --version, and validates its .desktop entry.
#
#   scripts/check-package.sh dist/pilotdesk.tar.xz VERSION
set -euo pipefail
pkg=${1:?package path}
version=${2:?expected version}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$pkg" -C "$tmp"

fail() { echo "check-package: $*" >&2; exit 1; }

bin=$(find "$tmp" -path '*/bin/pilotdesk' -type f | head -1)
[ -n "$bin" ] || fail "no bin/pilotdesk in $pkg: $(cd "$tmp" && find . -type f | tr '\n' ' ')"
[ -x "$bin" ] || fail "$bin is not executable"
got=$("$bin" --version) || fail "$bin --version failed"
[ "$got" = "pilotdesk $version" ] || fail "$bin --version printed '$got', want 'pilotdesk $version'"

desktop=$(find "$tmp" -name '*.desktop' | head -1)
[ -n "$desktop" ] || fail "no .desktop entry in $pkg"
desktop-file-validate "$desktop" || fail "$desktop is not a valid desktop entry"
grep -q '^Exec=pilotdesk' "$desktop" || fail "$desktop does not start pilotdesk: $(grep '^Exec' "$desktop")"
icon=$(find "$tmp" -path '*/pixmaps/*.png' -o -path '*/icons/*.png' | head -1)
[ -n "$icon" ] || fail "no icon in $pkg"

echo "check-package: ok: $(basename "$pkg"): $got, $(basename "$desktop") valid, icon $(basename "$icon")"
