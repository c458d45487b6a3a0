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
bin="$dest/node_modules/.bin/claude-agent-acp"

npm_tool_need npm node

if npm_tool_current && [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

npm_tool_install "about 85 MB"

if [[ ! -x "$bin" ]]; then
	npm_tool_fail "npm finished but $bin is missing (see $log)"
fi
# The adapter has no --version; its package.json names what npm installed.
npm_tool_check_version "package" "its package.json" \
	node -p 'require(process.argv[1]).version' "$dest/node_modules/@zed-industries/claude-agent-acp/package.json"

npm_tool_done "$bin"
