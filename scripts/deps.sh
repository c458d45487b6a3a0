#!/usr/bin/env bash
# Installs what building and testing pilotdesk needs on a Debian machine, and
# only what is missing: the C toolchain and X11/GL headers Fyne's GLFW driver
# compiles against, a colour emoji font for the window, tmux for the
# terminal-client tests, desktop-file-utils for checking the package, Xvfb
# for starting the real window, and the Go modules; with "web", also chromium
# for the web client's browser tests (scripts/web-e2e.sh); with "bench",
# also Xvfb and xdotool for the window benchmark (tools/winbench); with
# "window", those, ImageMagick and xwininfo for photographing the real window
# (scripts/acp-window.sh); with "devices", those, chromium, certutil and
# zbarimg (scripts/device-screenshots.sh); with "windows", the MinGW-w64 cross compiler,
# NSIS, zip and osslsigncode for the Windows build (scripts/package-windows.sh);
# with "wine", those and Wine for running it (scripts/check-windows.sh).
#
#   scripts/deps.sh          build and test dependencies
#   scripts/deps.sh web      those and chromium
#   scripts/deps.sh bench    those and Xvfb, xdotool
#   scripts/deps.sh window   those, Xvfb, xdotool, ImageMagick, x11-utils
#   scripts/deps.sh devices  those of window and chromium, libnss3-tools, zbar-tools, curl
#   scripts/deps.sh terminal those and fonts-dejavu-core
#   scripts/deps.sh windows  those and gcc-mingw-w64-x86-64, nsis, zip, osslsigncode
#   scripts/deps.sh wine     those of windows and wine, wine64
set -euo pipefail
cd "$(dirname "$0")/.."

# fonts-noto-color-emoji: the app is built without Fyne's bundled emoji font
# (BUILD_TAGS in the Makefile, docs/performance.md) and draws emoji from the
# system's fonts, so the machine that runs it needs one. xvfb: make test
# starts the real GL window (scripts/check-window.sh).
packages=(gcc libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev
	libxi-dev libxxf86vm-dev tmux desktop-file-utils xz-utils fonts-noto-color-emoji xvfb)
# Debian's chromium, not a browser downloaded by the test driver: it comes
# from the distribution's archive like every other package here.
if [ "${1:-}" = web ]; then packages+=(chromium); fi
# The window benchmark runs the real GL window on a virtual X server and
# types into it.
if [ "${1:-}" = bench ]; then packages+=(xdotool); fi
if [ "${1:-}" = window ] || [ "${1:-}" = devices ]; then packages+=(xdotool imagemagick x11-utils); fi
# Connect a device…'s pictures (scripts/device-screenshots.sh): the window's,
# and a phone's in chromium, which trusts the window's CA through an NSS
# store (certutil); zbarimg reads the dialog's QR code back.
if [ "${1:-}" = devices ]; then packages+=(chromium libnss3-tools zbar-tools curl fonts-dejavu-core); fi
# The terminal client's pictures (scripts/terminal-screenshot.sh) are drawn
# in DejaVu Sans Mono.
if [ "${1:-}" = terminal ]; then packages+=(fonts-dejavu-core); fi
# Windows, cross-built and run here: MinGW-w64 for Fyne's cgo driver, NSIS's
# makensis for the installer, Wine to smoke-test what was built.
windows=(gcc-mingw-w64-x86-64 nsis zip osslsigncode)
if [ "${1:-}" = windows ]; then packages+=("${windows[@]}"); fi
if [ "${1:-}" = wine ]; then packages+=("${windows[@]}" wine wine64); fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	sudo=()
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null; then sudo=(sudo); else
			echo "deps: need root to run: apt-get install ${missing[*]}" >&2
			exit 1
		fi
	fi
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
	if [ -x /usr/local/go/bin/go ]; then
		export PATH="/usr/local/go/bin:$PATH"
	else
		echo "deps: Go is not installed. Install Go 1.21 or newer (https://go.dev/doc/install); it fetches the toolchain go.mod names by itself." >&2
		exit 1
	fi
fi
go mod download
