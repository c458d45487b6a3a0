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
source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"

# The protocol facts in docs/copilot-cli.md were checked against 1.0.102.
VERSION="${COPILOT_VERSION:-1.0.102}"

npm_tool_init copilot @github/copilot "$VERSION"
loader="$dest/node_modules/@github/copilot/npm-loader.js"
cache="$dest/cache"

npm_tool_need npm node

# The loader runs the platform package's native binary; both must be present.
native_present() {
	compgen -G "$dest/node_modules/@github/copilot-linux*/copilot" >/dev/null 2>&1 ||
		compgen -G "$dest/node_modules/@github/copilot-darwin*/copilot" >/dev/null 2>&1 ||
		compgen -G "$dest/node_modules/@github/copilot-win32*/copilot.exe" >/dev/null 2>&1
}

if npm_tool_current && [[ -f "$loader" ]] && native_present; then
	echo "$loader"
	exit 0
fi

npm_tool_install "about 190 MB"

if [[ ! -f "$loader" ]]; then
	npm_tool_fail "npm finished but $loader is missing (see $log)"
fi
if ! native_present; then
	echo "install-copilot: npm finished but the native @github/copilot-<platform> package is missing;" >&2
	echo "  this platform ($(uname -s)/$(uname -m)) may not be supported, or npm skipped optional dependencies (see $log)" >&2
	exit 1
fi

# First run: unpack the payload into the shared cache, and prove it runs.
COPILOT_PKG_CACHE_HOME="$cache" npm_tool_check_version CLI "the CLI" node "$loader" --version

npm_tool_done "$loader"
