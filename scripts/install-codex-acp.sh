#!/usr/bin/env bash
# Installs Codex's ACP adapter (npm @zed-industries/codex-acp, pinned; its
# npm package carries the native binary for the platform) into the
# project-local directory .tools/codex-acp, for the end-to-end test of the
# ACP backend against Codex (session/acp). Idempotent: a second run with the
# same version does nothing.
#
# Usage: scripts/install-codex-acp.sh
#        CODEX_ACP_VERSION=0.16.0 scripts/install-codex-acp.sh
#
# On success it prints the path of the codex-acp executable. On failure it
# prints why and exits non-zero.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"

# docs/acp.md's facts about Codex were checked against 0.16.0.
VERSION="${CODEX_ACP_VERSION:-0.16.0}"

npm_tool_init codex-acp @zed-industries/codex-acp "$VERSION"
npm_tool_package_bin codex-acp "about 220 MB"
