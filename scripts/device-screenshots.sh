#!/usr/bin/env bash
# Connect a device…, from the first click to a phone connected over the
# network address (`make device-screenshots`; docs/devices.md, A phone on
# your network), photographed: the real GL window on a virtual X server
# (window-lib.sh), with a fresh HOME and data dir, and Debian's headless
# chromium at a phone's size as the phone (web/e2e/phonesetup.mjs).
#
# It needs a private network address for the relay to be reachable on, and
# makes one that touches nothing outside: as root, the whole run happens in
# a network namespace of its own (unshare --net) holding the loopback and a
# veth pair with 192.168.77.2/24. The namespace, and the address, go when
# the run ends, however it ends. Without root it skips, saying so (exit 0;
# DEVICE_SHOTS=require makes that an error).
#
#   1. the window's prompt "deploy the release" gets a reply (something for
#      the phone to show); Connect a device… from the sidebar's button:
#      the relay listens on 127.0.0.1 only, so the dialog shows no QR code,
#      says why and offers Make reachable from my network
#                                          → device-1-dialog-loopback.png
#   2. Make reachable from my network: the relay restarts on every address
#      with https, the dialog opens again   → device-2-dialog-reachable.png
#   3. a token for "Pixel": its QR code   → device-3-dialog-qr.png;
#      the code is read back from that picture with zbarimg: the setup
#      page's http://192.168.77.2:PORT/#token=pdt_…
#   4. the phone opens it, not trusting the CA yet → device-4-phone-setup.png
#   5. the CA (downloaded from the setup page's /pilotdesk-ca.crt, as the
#      phone does) goes into the phone browser's NSS store with certutil;
#      the page goes on to https://192.168.77.2:PORT/ by itself and the web
#      client connects, showing the conversation → device-5-phone-connected.png
#   6. the dialog's device list, still open, says Pixel is connected now
#                                          → device-6-dialog-connected.png
# It checks what it can without eyes and fails when one is wrong; LOOK at
# the pictures. The clicks are at the places the window's size (1100×720)
# puts the sidebar's button and the dialog's parts: after a layout change,
# look at the pictures (and at $name-failed.png) to find them again.
#
#   scripts/device-screenshots.sh [OUT_DIR]     pictures in OUT_DIR (default: a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
name=device-screenshots
export PATH="/usr/local/go/bin:$PATH"
addr=192.168.77.2

if [ "${1:-}" != --in-netns ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "$name: SKIPPED: it needs root to give the run a private network address of its own (a network namespace with $addr); run it as root" >&2
		[ "${DEVICE_SHOTS:-}" = require ] && exit 1
		exit 0
	fi
	# Everything that needs the network (apt, npm) or takes long happens
	# here, before the namespace, which has no way out.
	scripts/deps.sh devices
	if [ ! -f web/e2e/node_modules/.package-lock.json ] || [ web/e2e/package-lock.json -nt web/e2e/node_modules/.package-lock.json ]; then
		(cd web/e2e && npm ci --no-audit --no-fund --loglevel=error)
	fi
	echo "$name: building the GL binary" >&2
	mkdir -p .tools/device-screenshots
	go build -tags no_emoji -o .tools/device-screenshots/pilotdesk .
	out=${1:-}
	if [ -n "$out" ]; then
		mkdir -p "$out"
		out=$(cd "$out" && pwd)
	fi
	exec unshare --net -- "$0" --in-netns "$out"
fi

# In the namespace: the loopback, and a veth pair whose one end has the
# private address (a dummy interface would do, where the kernel has the
# module); both ends up, or the address is not.
ip link set lo up
ip link add pd0 type veth peer name pd1
ip addr add "$addr/24" dev pd0
ip link set pd1 up
ip link set pd0 up

. scripts/window-lib.sh
win_dirs device-screenshots "${2:-}"
bin=$repo/.tools/device-screenshots/pilotdesk

win_xvfb
home=$tmp/home
mkdir -p "$home" "$tmp/data"
cat >"$tmp/script.json" <<'JSON'
{"turns": [{"match": "deploy", "steps": [
  {"delta": "The build is green and the tests pass. "},
  {"delta": "Deploying v2.4 to staging first: it is up, and its health check answers."},
  {"usage": {"model": "gpt-5", "cost": 1, "inputTokens": 1800, "outputTokens": 60,
    "quotaSnapshots": {"premium_interactions": {"entitlementRequests": 300, "usedRequests": 43, "remainingPercentage": 85.67}}}}
]}]}
JSON
win_start "$home" HOME="$home" XDG_CONFIG_HOME="$home/.config" "$bin" --agent script --script "$tmp/script.json" --data-dir "$tmp/data" --verbose

win_find
waitfor "the window's client to connect" 60 logged 'relay: connection opened'
sleep 2
win_send "deploy the release"
# The window logs no turn; the scripted reply takes a moment.
sleep 5

# 1. The dialog on the loopback.
click 134 636 2 # the sidebar's Connect a device…
import -window "$win" "$out/device-1-dialog-loopback.png"

# 2. Make reachable from my network: the relay starts again on the network.
click 278 190 # Make reachable from my network (the dialog leaves 40 px of window around it)
# The relay notes its network address for this user's clients.
waitfor "the relay to listen on $addr" 60 grep -qs "$addr" "$tmp/data/relay.json"
sleep 3
import -window "$win" "$out/device-2-dialog-reachable.png"

# 3. A token for the phone, and its QR code.
click 600 240 0.3 # Device name
xdotool type --delay 15 "Pixel"
click 208 380 2 # Make a token
import -window "$win" "$out/device-3-dialog-qr.png"
link=$(zbarimg --quiet --raw "$out/device-3-dialog-qr.png" 2>/dev/null | head -1) || true
case "$link" in
"http://$addr:"*"/#token=pdt_"*) echo "$name: the QR code (read with zbarimg) opens ${link%%#*}#token=…" >&2 ;;
*) fail "the QR code read from device-3-dialog-qr.png is not the setup page at $addr with a token: '$link'" ;;
esac
base=${link%%#*}
# The dialog fits the window, so the token pushes the device list out of
# sight: the wheel brings it into view for picture 6.
xdotool mousemove $((wx + 550)) $((wy + 300))
for _ in 1 2 3 4 5 6; do xdotool click 5; done
sleep 0.5

# 4, 5. The phone: the setup page, then the CA trusted, then https.
phone=$tmp/phone
mkdir -p "$phone/.pki/nssdb"
certutil -N -d "sql:$phone/.pki/nssdb" --empty-password
trust="curl -fsS -o '$tmp/ca.crt' '${base}pilotdesk-ca.crt' && certutil -A -d 'sql:$phone/.pki/nssdb' -n 'pilotdesk local CA' -t C,, -i '$tmp/ca.crt' && echo '$name: the phone trusts the CA now (NSS store of its browser)' >&2"
# 6, while the phone is connected: the dialog's device list, still open,
# follows it (it reads the devices every 2 s).
connected="sleep 3 && import -window '$win' '$out/device-6-dialog-connected.png'"
(cd web/e2e && HOME="$phone" node phonesetup.mjs --url "$link" --out "$out" --trust "$trust" --connected "$connected") ||
	fail "the phone did not get to the web client over https (above)"
echo "$name: pictures in $out: LOOK at them" >&2
