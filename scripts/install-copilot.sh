#!/usr/bin/env bash
# Installs the GitHub Copilot CLI (npm @github/copilot, pinned) into the
# project-local directory .tools/copilot, for the end-to-end tests of
# session/copilot. Idempotent: a second run with the same version does nothing.
#
# Usage: scripts/install-copilot.sh            (from anywhere inside the repo)
#        COPILOT_VERSION=1.0.102 scripts/install-copilot.sh
#
# On success it prints the path of the CLI (the npm loader, npm-loader.js).
# On failure it prints why and exits non-zero.
#
# The native binary unpacks ~235 MB on its first run. The script does that
# once into .tools/copilot/cache; point COPILOT_PKG_CACHE_HOME there (the
# session/copilot tests do) to reuse it.
set -euo pipefail

# The protocol facts in docs/copilot-cli.md were checked against 1.0.102.
VERSION="${COPILOT_VERSION:-1.0.102}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.tools/copilot"
loader="$dest/node_modules/@github/copilot/npm-loader.js"
stamp="$dest/.installed-version"
cache="$dest/cache"

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-copilot: $tool is not installed (needed for @github/copilot@$VERSION)" >&2
		exit 1
	fi
done

# The loader runs the platform package's native binary; both must be present.
native_present() {
	compgen -G "$dest/node_modules/@github/copilot-linux*/copilot" >/dev/null 2>&1 ||
		compgen -G "$dest/node_modules/@github/copilot-darwin*/copilot" >/dev/null 2>&1 ||
		compgen -G "$dest/node_modules/@github/copilot-win32*/copilot.exe" >/dev/null 2>&1
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$VERSION" && -f "$loader" ]] && native_present; then
	echo "$loader"
	exit 0
fi

mkdir -p "$dest"
# A private package.json keeps npm from walking up to the repository root.
if [[ ! -f "$dest/package.json" ]]; then
	printf '{\n  "name": "pilotdesk-tools-copilot",\n  "private": true\n}\n' >"$dest/package.json"
fi
rm -f "$stamp"

log="$dest/npm-install.log"
echo "install-copilot: installing @github/copilot@$VERSION into $dest (about 190 MB)..." >&2
if ! npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error \
	"@github/copilot@$VERSION" >"$log" 2>&1; then
	echo "install-copilot: npm install @github/copilot@$VERSION failed:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi

if [[ ! -f "$loader" ]]; then
	echo "install-copilot: npm finished but $loader is missing (see $log)" >&2
	exit 1
fi
if ! native_present; then
	echo "install-copilot: npm finished but the native @github/copilot-<platform> package is missing;" >&2
	echo "  this platform ($(uname -s)/$(uname -m)) may not be supported, or npm skipped optional dependencies (see $log)" >&2
	exit 1
fi

# First run: unpack the payload into the shared cache, and prove it runs.
if ! out="$(COPILOT_PKG_CACHE_HOME="$cache" node "$loader" --version 2>&1)"; then
	echo "install-copilot: the installed CLI does not run: $out" >&2
	exit 1
fi
case "$out" in
*"$VERSION"*) ;;
*)
	echo "install-copilot: expected version $VERSION, the CLI says: $out" >&2
	exit 1
	;;
esac

echo "$VERSION" >"$stamp"
echo "$loader"
