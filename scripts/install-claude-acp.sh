#!/usr/bin/env bash
# Installs Claude Code's ACP adapter (npm @zed-industries/claude-agent-acp,
# pinned; it runs Claude Code through the Claude Agent SDK) into the
# project-local directory .tools/claude-acp, for the end-to-end test of the
# ACP backend against Claude Code (session/acp). Idempotent: a second run
# with the same version does nothing.
#
# Usage: scripts/install-claude-acp.sh
#        CLAUDE_ACP_VERSION=0.23.1 scripts/install-claude-acp.sh
#
# On success it prints the path of the claude-agent-acp executable. On
# failure it prints why and exits non-zero.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"

# docs/acp.md's facts about Claude Code were checked against 0.23.1.
VERSION="${CLAUDE_ACP_VERSION:-0.23.1}"

npm_tool_init claude-acp @zed-industries/claude-agent-acp "$VERSION"
npm_tool_package_bin claude-agent-acp "about 85 MB"
