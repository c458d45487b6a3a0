#!/usr/bin/env bash
# Lighthouse (pinned in web/lighthouse/package-lock.json, its mobile preset,
# the default) on the web client served by the real relay (`pilotdesk
# serve`, the built-in demo agent) in Debian's headless chromium. Part of
# `make bench`: it prints the scores and fails unless accessibility is at
# least 98, best practices 100, and the page is installable (the PWA
# category's installable-manifest audit).
#
# Lighthouse's performance category is left out: its trace of the page load
# fails under this chromium (NO_NAVSTART), and the page's speed has its own
# measures (web/e2e/long.test.js, docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

scripts/deps.sh web
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -f web/lighthouse/node_modules/.package-lock.json ] || [ web/lighthouse/package-lock.json -nt web/lighthouse/node_modules/.package-lock.json ]; then
	(cd web/lighthouse && npm ci --no-audit --no-fund --loglevel=error)
fi
mkdir -p .tools/lighthouse
go build -tags ci -o .tools/lighthouse/pilotdesk .

tmp=$(mktemp -d)
relay=
cleanup() {
	[ -n "$relay" ] && kill "$relay" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
token=lighthouse-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
.tools/lighthouse/pilotdesk serve --listen 127.0.0.1:0 --agent script --data-dir :memory: --token "$token" >"$tmp/serve.log" 2>&1 &
relay=$!
addr=
for _ in $(seq 100); do
	addr=$(grep -o 'ws://127.0.0.1:[0-9]*' "$tmp/serve.log" | head -1 | sed 's|^ws:|http:|' || true)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { cat "$tmp/serve.log" >&2; echo "lighthouse: the relay did not start" >&2; exit 1; }

web/lighthouse/node_modules/.bin/lighthouse "$addr/#token=$token" --quiet \
	--chrome-path="$chromium" \
	--chrome-flags="--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync" \
	--only-categories=accessibility,best-practices,pwa \
	--output=json --output-path="$tmp/report.json"

node - "$tmp/report.json" <<'JS'
const r = require(process.argv[2]);
if (r.runtimeError) { console.error(`lighthouse: ${r.runtimeError.message}`); process.exit(1); }
const score = (k) => Math.round(r.categories[k].score * 100);
const installable = r.audits['installable-manifest']?.score === 1;
console.log(`lighthouse ${r.lighthouseVersion} (${r.configSettings.formFactor}): accessibility ${score('accessibility')} (target >= 98), best practices ${score('best-practices')} (target 100), installable ${installable} (target true)`);
for (const a of Object.values(r.audits)) {
  if (a.score !== null && a.score < 1 && ['binary', 'numeric'].includes(a.scoreDisplayMode)) console.log(`  not passed: ${a.id}: ${a.title}`);
}
const bad = [];
if (score('accessibility') < 98) bad.push('accessibility under 98');
if (score('best-practices') < 100) bad.push('best practices under 100');
if (!installable) bad.push('not installable');
if (bad.length) { console.error(`lighthouse: ${bad.join(', ')}`); process.exit(1); }
JS
