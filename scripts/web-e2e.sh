#!/usr/bin/env bash
# Runs the web client's browser tests (web/e2e/): the real relay
# (`pilotdesk serve`, the scripted agent, and for the agent's reasoning and
# plan the ACP backend driving the fake ACP agent, session/acp's test agent
# built as .tools/e2e/fake-acp) in Debian's headless chromium, driven by
# playwright-core (pinned in web/e2e/package-lock.json).
#
# It installs what is missing: chromium (scripts/deps.sh web), the npm
# package (npm ci), and it builds the binary with the headless `ci` tag.
# When chromium or Node.js cannot be had (no root, no network, an old
# node), it says so on stderr and skips: exit 0, never silently. With
# WEB_E2E=require a skip is an error instead (exit 1).
#
#   scripts/web-e2e.sh                      every browser test
#   WEB_SCREENSHOTS=screenshots scripts/web-e2e.sh screenshots.test.js
#                                           the screenshots into screenshots/
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

skip() {
	echo "web-e2e: SKIPPED, the web client's browser tests did not run: $*" >&2
	if [ "${WEB_E2E:-}" = require ]; then exit 1; fi
	exit 0
}

scripts/deps.sh web || skip "chromium could not be installed (the reason is above)"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "${CHROMIUM:-/usr/bin/chromium} is missing after the install"
command -v node >/dev/null || skip "node is not installed (Node.js 20 or newer)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
	skip "node $(node --version) is too old: playwright-core needs Node.js 20 or newer"
command -v npm >/dev/null || skip "npm is not installed"

if [ ! -f web/e2e/node_modules/.package-lock.json ] || [ web/e2e/package-lock.json -nt web/e2e/node_modules/.package-lock.json ]; then
	echo "web-e2e: npm ci in web/e2e" >&2
	(cd web/e2e && npm ci --no-audit --no-fund --loglevel=error) || skip "npm ci failed in web/e2e (no network to the npm registry?)"
fi

go build -tags ci -o .tools/e2e/pilotdesk .
go build -o .tools/e2e/fake-acp ./session/acp/internal/fakeagent/cmd/fake-acp
cd web/e2e
start=$(date +%s)
# A bound on the whole run (WEB_E2E_TIMEOUT, default 25 minutes; about 5
# on a quiet 2-core machine): a test file that never ends fails the run
# with this message instead of holding it until an outer time limit.
limit=${WEB_E2E_TIMEOUT:-25m}
rc=0
PILOTDESK_BIN="$PWD/../../.tools/e2e/pilotdesk" FAKE_ACP_BIN="$PWD/../../.tools/e2e/fake-acp" \
	timeout --kill-after=30s "$limit" node --test --test-concurrency=1 --test-reporter=spec "$@" || rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "web-e2e: FAILED: the browser tests did not end within $limit (the last file named above did not finish: a test or a process it started still runs)" >&2
	exit 1
fi
[ "$rc" = 0 ] || exit "$rc"
echo "web-e2e: passed in $(($(date +%s) - start)) s" >&2
