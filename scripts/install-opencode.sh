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
source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"

# docs/acp.md's facts about opencode were checked against 1.18.33.
VERSION="${OPENCODE_VERSION:-1.18.33}"

npm_tool_init opencode opencode-ai "$VERSION"
bin="$dest/node_modules/.bin/opencode"

npm_tool_need npm

npm_tool_installed "$bin" && exit 0

npm_tool_install "about 350 MB"

# The package's postinstall picks the platform binary; prove it runs.
# Its home is a scratch dir: opencode writes its data and logs there.
scratch="$dest/home"
mkdir -p "$scratch"
HOME="$scratch" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" \
	XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" \
	npm_tool_check_version opencode opencode "$bin" --version

npm_tool_done "$bin"
