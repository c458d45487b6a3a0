#!/usr/bin/env bash
# Installs opencode (npm opencode-ai, pinned) into the project-local directory
# .tools/opencode, for the end-to-end test of the ACP backend (session/acp)
# against a second real agent, `opencode acp`. Idempotent: a second run with
# the same version does nothing.
#
# Usage: scripts/install-opencode.sh            (from anywhere inside the repo)
#        OPENCODE_VERSION=1.18.33 scripts/install-opencode.sh
#
# On success it prints the path of the opencode executable. On failure it
# prints why and exits non-zero.
set -euo pipefail

# docs/acp.md's facts about opencode were checked against 1.18.33.
VERSION="${OPENCODE_VERSION:-1.18.33}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.tools/opencode"
bin="$dest/node_modules/.bin/opencode"
stamp="$dest/.installed-version"

if ! command -v npm >/dev/null 2>&1; then
	echo "install-opencode: npm is not installed (needed for opencode-ai@$VERSION)" >&2
	exit 1
fi

if [[ -f "$stamp" && "$(cat "$stamp")" == "$VERSION" && -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dest"
# A private package.json keeps npm from walking up to the repository root.
if [[ ! -f "$dest/package.json" ]]; then
	printf '{\n  "name": "pilotdesk-tools-opencode",\n  "private": true\n}\n' >"$dest/package.json"
fi
rm -f "$stamp"

log="$dest/npm-install.log"
echo "install-opencode: installing opencode-ai@$VERSION into $dest (about 350 MB)..." >&2
if ! npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error \
	"opencode-ai@$VERSION" >"$log" 2>&1; then
	echo "install-opencode: npm install opencode-ai@$VERSION failed:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi

# The package's postinstall picks the platform binary; prove it runs.
# Its home is a scratch dir: opencode writes its data and logs there.
scratch="$dest/home"
mkdir -p "$scratch"
if ! out="$(HOME="$scratch" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" \
	XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" "$bin" --version 2>&1)"; then
	echo "install-opencode: the installed opencode does not run: $out" >&2
	exit 1
fi
case "$out" in
*"$VERSION"*) ;;
*)
	echo "install-opencode: expected version $VERSION, opencode says: $out" >&2
	exit 1
	;;
esac

echo "$VERSION" >"$stamp"
echo "$bin"
