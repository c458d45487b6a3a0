#!/usr/bin/env bash
# Installs nats-server (pinned) into the project-local .tools/bin, for the
# tests that run the JetStream history store on a real 3-node cluster
# (relay/history/jetstream). It is built from the Go module proxy with the
# project's Go: no other download. Idempotent: a second run with the same
# version does nothing.
#
# Usage: scripts/install-nats-server.sh
#        NATS_SERVER_VERSION=v2.15.2 scripts/install-nats-server.sh
#
# On success it prints the path of the binary; on failure it says why and
# exits non-zero.
set -euo pipefail

# docs/scale-out.md was checked against this version (the store needs 2.12+).
VERSION="${NATS_SERVER_VERSION:-v2.15.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.tools/bin"
server="$bin/nats-server"

if [[ -x "$server" ]] && [[ "$("$server" --version 2>/dev/null)" == "nats-server: $VERSION" ]]; then
	echo "$server"
	exit 0
fi
if ! command -v go >/dev/null; then
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH="/usr/local/go/bin:$PATH"
	else
		echo "install-nats-server: Go is not installed" >&2
		exit 1
	fi
fi
mkdir -p "$bin"
echo "install-nats-server: building nats-server $VERSION (about a minute the first time)" >&2
# go install with a version builds it on its own: go.mod is not touched.
GOBIN="$bin" go install "github.com/nats-io/nats-server/v2@$VERSION"
"$server" --version >/dev/null
echo "$server"
