#!/usr/bin/env bash
# Runs the web client's unit tests (web/unit/*.test.mjs) with Node's own
# test runner, nothing from npm: the web fold (web/static/js/conversation.js
# and words.js) against the contracts of the recorded streams in
# conversation/testdata, which the Go fold and the terminal are checked
# against too, words.js against the Go words (testdata/words.json), the
# transcript's use of them (on web/e2e/fakedom.js), and the script of the relay's setup page for phones (cli/lansetup.html). Without Node.js 20+ it says so on stderr and skips (exit 0);
# with WEB_UNIT=require a skip is an error (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
	echo "web-unit: SKIPPED, the web client's unit tests did not run: $*" >&2
	if [ "${WEB_UNIT:-}" = require ]; then exit 1; fi
	exit 0
}

command -v node >/dev/null || skip "node is not installed (Node.js 20 or newer)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
	skip "node $(node --version) is too old: the tests need Node.js 20 or newer"
TZ=UTC node --test --test-reporter=spec web/unit/
