#!/usr/bin/env bash
# Builds pilotdesk for Windows on Linux, without Docker (`make
# package-windows`): MinGW-w64 compiles Fyne's cgo driver, windres embeds
# the icon, manifest and version (tools/winres writes them), NSIS makes the
# installer, zip the portable archive.
#
#   dist/windows/pilotdesk.exe          the app (GUI: no console window)
#   dist/windows/pilotdesk.com          the same program as a console one, so
#                                       `pilotdesk serve` and `pilotdesk chat`
#                                       print to the terminal they run in
#   dist/pilotdesk-setup-VERSION.exe    the installer (per user, no admin)
#   dist/pilotdesk-VERSION-windows-amd64.zip   both programs, portable
#
# Signing (docs/windows.md): WINDOWS_SIGN_PFX names a PKCS#12 certificate
# and WINDOWS_SIGN_PASSWORD_FILE a file holding its password (never the
# command line); the programs, the installer and its uninstaller are then
# signed with osslsigncode, time-stamped when WINDOWS_SIGN_TIMESTAMP_URL is
# set. Without them everything is built unsigned.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
build=$(sed -n 's/^ *Build *= *\([0-9]*\)/\1/p' FyneApp.toml)
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

scripts/deps.sh windows

out=dist/windows
rm -rf "$out"
mkdir -p "$out/res"
go run ./tools/winres -icon assets/icon.png -version "$version" -build "$build" -out "$out/res"
# The resource object sits beside main.go only while the build runs: its
# name limits it to windows/amd64 builds, and it is removed however the
# build ends.
syso=rsrc_windows_amd64.syso
trap 'rm -f "$syso"' EXIT
(cd "$out/res" && x86_64-w64-mingw32-windres -i pilotdesk.rc -O coff -o pilotdesk.syso)
cp "$out/res/pilotdesk.syso" "$syso"
cp "$out/res/pilotdesk.ico" "$out/"

ldflags="-s -w -X github.com/pilotdesk/pilotdesk/cli.Version=$version"
export CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc
echo "package-windows: building $out/pilotdesk.exe (the first build compiles Fyne's OpenGL driver with MinGW: minutes)"
go build -tags no_emoji -trimpath -ldflags "-H windowsgui $ldflags" -o "$out/pilotdesk.exe" .
go build -tags no_emoji -trimpath -ldflags "$ldflags" -o "$out/pilotdesk.com" .
unset CGO_ENABLED GOOS GOARCH CC

sign_args=()
if [ -n "${WINDOWS_SIGN_PFX:-}" ]; then
	if [ -z "${WINDOWS_SIGN_PASSWORD_FILE:-}" ]; then
		echo "package-windows: WINDOWS_SIGN_PFX is set but WINDOWS_SIGN_PASSWORD_FILE is not" >&2
		exit 1
	fi
	signer=$(mktemp)
	trap 'rm -f "$syso" "$signer"' EXIT
	# makensis runs the signer on the installer and the uninstaller it
	# writes; the same script signs the programs first.
	cat > "$signer" <<SIGN
#!/usr/bin/env bash
set -euo pipefail
ts=()
if [ -n "${WINDOWS_SIGN_TIMESTAMP_URL:-}" ]; then ts=(-ts "${WINDOWS_SIGN_TIMESTAMP_URL:-}"); fi
osslsigncode sign -pkcs12 "$WINDOWS_SIGN_PFX" -readpass "$WINDOWS_SIGN_PASSWORD_FILE" \\
	-n pilotdesk -h sha256 "\${ts[@]}" -in "\$1" -out "\$1.signed"
mv "\$1.signed" "\$1"
SIGN
	chmod +x "$signer"
	"$signer" "$out/pilotdesk.exe"
	"$signer" "$out/pilotdesk.com"
	sign_args=(-DSIGN="$signer")
	echo "package-windows: signed with $WINDOWS_SIGN_PFX"
else
	echo "package-windows: unsigned (set WINDOWS_SIGN_PFX and WINDOWS_SIGN_PASSWORD_FILE to sign; docs/windows.md)"
fi

setup="dist/pilotdesk-setup-$version.exe"
makensis -V2 -INPUTCHARSET UTF8 \
	-DVERSION="$version" -DVERSION4="$version.$build" \
	-DSRCDIR="$(pwd)/$out" -DOUTFILE="$(pwd)/$setup" "${sign_args[@]}" \
	packaging/windows/installer.nsi

zipfile="dist/pilotdesk-$version-windows-amd64.zip"
rm -f "$zipfile"
stage=$(mktemp -d)
mkdir "$stage/pilotdesk"
cp "$out/pilotdesk.exe" "$out/pilotdesk.com" "$stage/pilotdesk/"
(cd "$stage" && zip -qr9 - pilotdesk) > "$zipfile"
rm -rf "$stage"

for f in "$setup" "$zipfile"; do
	echo "package-windows: $f ($(du -h "$f" | cut -f1))"
done
