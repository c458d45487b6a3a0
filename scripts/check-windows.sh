#!/usr/bin/env bash
# The Windows build, checked on Linux (part of `make test`): builds the
# installer and portable zip (scripts/package-windows.sh), then runs
# tests/windows under Wine in a fresh prefix: a silent install, --version,
# the relay on the scripted agent answering a whole turn from the Go client
# with SQLite history kept across a restart and its data-dir lock held, the
# terminal client with piped input, and the uninstaller leaving the data.
# Also builds the relay and terminal client for macOS (no cgo: -tags nogui),
# so that at least they are known to compile there.
#
# Skipped, with the reason printed, when the packages cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

echo "check-windows: macOS builds of serve and chat (GOOS=darwin, no cgo, -tags nogui)"
for arch in amd64; do
	CGO_ENABLED=0 GOOS=darwin GOARCH=$arch go build -tags nogui -o "dist/darwin/pilotdesk-cli-$arch" .
done

if ! scripts/deps.sh wine >/dev/null; then
	echo "check-windows: SKIPPED: MinGW-w64, NSIS or Wine could not be installed (scripts/deps.sh wine)"
	exit 0
fi
scripts/package-windows.sh
# Go's Windows runtime takes random bytes from bcryptprimitives.dll, which
# Wine 8 (Debian 12's) lacks: the test puts this stand-in into its prefix
# when the prefix has none (tests/windows/wineshim says more).
shim=dist/wine/bcryptprimitives.dll
mkdir -p dist/wine
x86_64-w64-mingw32-gcc -shared -O2 -o "$shim" tests/windows/wineshim/bcryptprimitives.c \
	tests/windows/wineshim/bcryptprimitives.def -ladvapi32
version=$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
PILOTDESK_WINE_SETUP="$(pwd)/dist/pilotdesk-setup-$version.exe" PILOTDESK_WINE_SHIM="$(pwd)/$shim" \
	go test -count=1 -timeout 15m -v -run TestWineSmoke ./tests/windows
