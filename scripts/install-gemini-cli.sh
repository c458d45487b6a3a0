#!/usr/bin/env bash
# Installs the Gemini CLI (npm @google/gemini-cli, pinned; `gemini --acp`
# speaks ACP) into the project-local directory .tools/gemini-cli, for the
# end-to-end test of the ACP backend against it (session/acp). Idempotent: a
# second run with the same version does nothing.
#
# Usage: scripts/install-gemini-cli.sh
#        GEMINI_CLI_VERSION=0.61.0 scripts/install-gemini-cli.sh
#
# On success it prints the path of the gemini executable. On failure it
# prints why and exits non-zero.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"

# docs/acp.md's facts about the Gemini CLI were checked against 0.61.0.
VERSION="${GEMINI_CLI_VERSION:-0.61.0}"

npm_tool_init gemini-cli @google/gemini-cli "$VERSION"
bin="$dest/node_modules/.bin/gemini"

npm_tool_need npm node

npm_tool_installed "$bin" && exit 0

npm_tool_install "about 100 MB"

scratch="$dest/home"
mkdir -p "$scratch"
HOME="$scratch" npm_tool_check_version "Gemini CLI" gemini "$bin" --version

npm_tool_done "$bin"
