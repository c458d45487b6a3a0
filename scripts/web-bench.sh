#!/usr/bin/env bash
# The web client's speed targets (part of `make bench`): web/e2e/*.bench.mjs
# against the real relay in Debian's headless chromium, set up as the
# browser tests are (scripts/web-e2e.sh: chromium, playwright-core from
# web/e2e's lock, the binary with the headless `ci` tag). Each bench prints
# its figures and exits non-zero when it misses its target.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
scripts/deps.sh web
if [ ! -f web/e2e/node_modules/.package-lock.json ] || [ web/e2e/package-lock.json -nt web/e2e/node_modules/.package-lock.json ]; then
	(cd web/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
go build -tags ci -o .tools/e2e/pilotdesk .
go build -o .tools/e2e/fake-acp ./session/acp/internal/fakeagent/cmd/fake-acp
cd web/e2e
status=0
for bench in *.bench.mjs; do
	PILOTDESK_BIN="$PWD/../../.tools/e2e/pilotdesk" FAKE_ACP_BIN="$PWD/../../.tools/e2e/fake-acp" node "$bench" || status=1
done
exit $status
