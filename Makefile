# pilotdesk: `make run` opens the app, `make test` runs every check.
# Both install what a fresh Debian machine lacks (scripts/deps.sh).

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
# Fyne reads the locale from LANG; "C" makes it log a parse error.
export LANG := en_US.UTF-8
GO ?= go
# Tests run on Fyne's headless test driver: the `ci` tag swaps the GL driver
# for the software one, so no display (and no GL compile) is needed.
TEST_TAGS := ci
FUZZTIME ?= 60s
BIN := pilotdesk
VERSION := $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
BUILD := $(shell sed -n 's/^ *Build *= *\([0-9]*\)/\1/p' FyneApp.toml)
LDFLAGS := -X github.com/pilotdesk/pilotdesk/cli.Version=$(VERSION)
# The app is built without Fyne's bundled colour emoji font: Fyne parses its
# 4 MB once per text style, 16 MB of the window's memory (docs/performance.md);
# emoji are drawn from the system's fonts instead.
BUILD_TAGS := no_emoji
# The fyne packaging tool, pinned, installed into the project.
FYNE_TOOL_VERSION := v1.7.4
FYNE := .tools/bin/fyne

.PHONY: run test deps copilot-cli opencode acp-agents nats-server build vet web-test web-screenshots acp-window checkpoint-window device-screenshots terminal-screenshot bench bench-nats bench-window screenshots fuzz load flood chaos cluster package install package-windows package-darwin clean

run: deps build
	./$(BIN)

build:
	@# The first build compiles Fyne's OpenGL and GLFW drivers with cgo,
	@# which is silent for minutes: say so, so that nobody thinks it hangs.
	@test -x $(BIN) || echo "make: building ./$(BIN); the first build compiles Fyne's OpenGL driver (cgo) and takes about 4 minutes on 2 cores, later builds a few seconds"
	$(GO) build -tags $(BUILD_TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) .

deps:
	@scripts/deps.sh

# The real Copilot CLI from npm, for the end-to-end tests; they are skipped,
# with the reason printed, only when this install fails.
copilot-cli:
	@scripts/install-copilot.sh || echo "make: the Copilot CLI could not be installed from npm; its end-to-end tests will be skipped"

# opencode from npm: the ACP backend's end-to-end test runs `opencode acp` as
# a second real agent; skipped, with the reason printed, when this fails.
opencode:
	@scripts/install-opencode.sh || echo "make: opencode could not be installed from npm; its ACP end-to-end test will be skipped"

# Claude Code's ACP adapter, the Gemini CLI and Codex's ACP adapter from npm
# (pinned): the ACP backend's end-to-end tests run each against a loopback
# mock of its provider's API; a test is skipped, with the reason printed,
# when its agent could not be installed. The three install side by side.
acp-agents:
	@scripts/install-claude-acp.sh >/dev/null & c=$$!; \
	scripts/install-gemini-cli.sh >/dev/null & g=$$!; \
	scripts/install-codex-acp.sh >/dev/null & x=$$!; \
	wait $$c || echo "make: claude-agent-acp could not be installed from npm; its ACP end-to-end test will be skipped"; \
	wait $$g || echo "make: the Gemini CLI could not be installed from npm; its ACP end-to-end test will be skipped"; \
	wait $$x || echo "make: codex-acp could not be installed from npm; its ACP end-to-end test will be skipped"

vet:
	$(GO) vet -tags $(TEST_TAGS) ./...
	@# staticcheck (pinned by go.mod's tool line): the unused code, the
	@# deprecated calls and the checks that cannot fail that vet misses.
	$(GO) tool staticcheck -tags $(TEST_TAGS) ./...
	@# Every Go file as gofmt writes it (the installed tools' trees aside).
	@unformatted=$$(find . -name '*.go' -not -path './.tools/*' -not -path '*/node_modules/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt -w these files:"; echo "$$unformatted"; exit 1; fi

# nats-server (pinned, built from the Go module proxy) for the JetStream
# history store's tests on a real 3-node cluster; skipped, with the reason
# printed, only when this fails.
nats-server:
	@scripts/install-nats-server.sh >/dev/null || echo "make: nats-server could not be installed; the real-cluster tests of relay/history/jetstream will be skipped"

# Each stage is timed (scripts/stage.sh): the run ends with the time of
# each, and a run stopped from outside prints them with the stage it cut.
test:
	@STAGE_FIRST=1 scripts/stage.sh deps scripts/deps.sh
	@# The agents from npm download while nats-server compiles.
	@scripts/stage.sh tools $(MAKE) --no-print-directory -j4 copilot-cli opencode acp-agents nats-server
	@scripts/stage.sh vet $(MAKE) --no-print-directory vet
	@# Three packages at a time on any machine: most of the slow ones wait
	@# (on relays, leases, elections, browsers) more than they compute, so a
	@# third overlaps their waits (go-test 447 s with go's default of 2 on
	@# 2 cores, 358 s with 3, both passing, on the same quiet machine).
	@scripts/stage.sh go-test $(GO) test -race -p 3 -tags $(TEST_TAGS) -count=1 -timeout 25m ./...
	@# The copy of chroma whose lexers load on first use: its tests, and the
	@# same lexers, matches and tokens as the released chroma.
	@scripts/stage.sh chroma scripts/chroma-check.sh
	@# The web client's fold against the recorded streams' contracts (Node, no npm).
	@scripts/stage.sh web-unit scripts/web-unit.sh
	@# The web client in a real browser (installs chromium and the npm driver).
	@scripts/stage.sh web-e2e scripts/web-e2e.sh
	@# The real app (GL driver) builds, packages, starts and has a valid .desktop entry.
	@scripts/stage.sh package $(MAKE) --no-print-directory package
	@scripts/stage.sh check-package scripts/check-package.sh dist/pilotdesk.tar.xz $(VERSION)
	@# The real GL window starts on Xvfb, connects, and quits on SIGTERM
	@# without an error logged.
	@scripts/stage.sh build $(MAKE) --no-print-directory build
	@scripts/stage.sh check-window scripts/check-window.sh ./$(BIN)
	@# The Windows installer, built here and smoke-tested under Wine; the
	@# relay and terminal client built for macOS.
	@scripts/stage.sh windows scripts/check-windows.sh
	@scripts/stage.sh --summary

# The web client's browser tests alone: the real relay in Debian's headless
# chromium (scripts/web-e2e.sh says why, and skips, when chromium or Node.js
# cannot be installed). web-screenshots writes screenshots/web-*.png.
web-test:
	scripts/web-unit.sh
	scripts/web-e2e.sh

web-screenshots:
	WEB_SCREENSHOTS=screenshots scripts/web-e2e.sh screenshots.test.js changes.test.js workspaces.test.js follow.test.js phone.test.js

# The window on a real ACP agent, end to end: the GL binary under Xvfb picks
# opencode in Settings and edits a file through it, offline against the
# mock model; photographs in screenshots/acp-window-*.png (docs/acp.md).
acp-window: opencode
	scripts/acp-window.sh screenshots

# The window's checkpoints and workspaces, end to end: the GL binary under
# Xvfb, the scripted agent editing a git repository; photographs of the
# changes card with a diff open, the restore's confirmation and the
# new-conversation dialog in screenshots/checkpoint-window-*.png
# (docs/checkpoints.md).
checkpoint-window:
	scripts/checkpoint-window.sh screenshots

# Connect a device…, from the first click to a phone connected over the
# network address: the GL binary under Xvfb and Debian's chromium at a
# phone's size, in a network namespace of their own with a private address
# (so it needs root, and skips, saying so, without); the phone trusts the
# window's CA through an NSS store. screenshots/device-*.png (docs/devices.md).
device-screenshots:
	scripts/device-screenshots.sh screenshots

# The terminal client's rendered markdown, mid-reply and whole, on the demo
# agent in tmux: screenshots/terminal-markdown*.png (docs/cli.md, Markdown).
terminal-screenshot:
	scripts/terminal-screenshot.sh screenshots

# Speed targets live here, never in unit tests: the relay's fan-out (4,000
# deltas of 64 B to 50 subscribers over loopback WebSockets; deliveries/s,
# p50/p99 latency, CPU and allocations per delivery, RSS with 1,000 idle
# connections), in memory, on SQLite and on JetStream, next to nats-server's
# own core fan-out (same subscribers, same message size: the relay's CPU per
# delivery as a ratio of nats-server's, target <= 0.4x, issue #32), and the window's cost
# of drawing one frame's batch of deltas with 50, 200 and 800 messages in the
# history; Lighthouse on the web client (mobile: accessibility >= 98, best
# practices 100, installable) and its scrolling of a long conversation (20
# screens of 5,000 tool calls: under 1 s of main-thread CPU, no task over
# 50 ms); then the relays sharing a NATS JetStream
# cluster (bench-nats) and the real window against Fyne floor programs
# (bench-window).
bench: nats-server
	$(GO) run ./tools/fanoutbench
	$(GO) run ./tools/fanoutbench -store sqlite -idle 0
	$(GO) run ./tools/checkpointbench
	$(MAKE) --no-print-directory bench-nats
	$(GO) test -tags $(TEST_TAGS) ./ui -run '^$$' -bench StreamBatch -benchtime 2000x
	scripts/lighthouse.sh
	scripts/web-bench.sh
	$(MAKE) --no-print-directory bench-window

# The relays on a NATS JetStream cluster (docs/scale-out.md): a 3-node
# nats-server cluster on loopback, R3, and a node in the relay's process.
# Each of issue #15's targets is printed as measured against target:
# fan-out throughput on the cluster >= 0.5x a relay on SQLite in the same
# run (rounds alternating); p99 from the owner's agent event to a client of
# another relay < 50 ms at 2,000 deltas/s; replay of a 100,000-event
# conversation >= 100,000 events/s; the interrupted turn closed at another
# relay's client within 20 s of its owner's SIGKILL (a short load run: three
# relays, the default lease). Issue #32's: the cluster's appends/s with
# three streams against one, and each relay's CPU with 1, 2, 3 relays
# under the same load. About six minutes on 2 cores.
bench-nats: nats-server
	$(GO) run ./tools/fanoutbench -store jetstream -nats cluster -idle 0 -anchor=false -compare sqlite
	@# What fsync before every ack (sync_interval: always, the documented
	@# configuration) costs: the same fan-out on nodes with JetStream's default.
	$(GO) run ./tools/fanoutbench -store jetstream -nats cluster -nats-sync 2m -idle 0 -anchor=false
	$(GO) run ./tools/fanoutbench -store jetstream -nats embedded -idle 0 -anchor=false
	$(GO) run ./tools/fanoutbench -replay 100000 -store jetstream -nats cluster
	@# The cluster's appends/s with the conversations in one stream and
	@# spread over three (--nats-streams 3), on the same three nodes, rounds
	@# alternating (issue #32: target >= 2x).
	$(GO) run ./tools/fanoutbench -appends 5s -streams 3 -size 100
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench 'ClusterLatency/cluster' -benchtime 1x ./relay/
	$(LOAD_BUILD)
	.tools/load/load -bin .tools/load/pilotdesk -nats -conns 150 -convs 15 -duration 30s -kill-at 5s
	@# The same offered load on 1, 2 and 3 relays, one after the other:
	@# each relay's CPU per delivery as a share of the single relay's
	@# (issue #32: <= 0.38 with 3 relays), three rounds of 1, 2, 3, 3, 2, 1
	@# and their median (one round moves by a third on a shared machine);
	@# each count above one twice, a conversation's clients spread over the
	@# relays (most of them served by a relay that follows it) and all on
	@# its owner, side by side.
	.tools/load/load -bin .tools/load/pilotdesk -nats -scale -placement both -rounds 3 -relays 3 -conns 150 -convs 15 -duration 30s

# The window's speed targets (docs/performance.md): the real GL binary under
# Xvfb next to the floor programs of tools/winbench on the same X server,
# three runs in alternating order (about 8 minutes, plus the first cgo
# build): idle, streaming, start-up, and opening a stored 5,000-message
# conversation. WINBENCH_FLAGS adds flags, e.g. WINBENCH_FLAGS="-runs 1
# -only idle" or "-perf .tools/winbench/perf" (perf(1) profiles).
WINBENCH_FLAGS ?=
bench-window:
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory build
	@# The floors are built as the app is (BUILD_TAGS): a ratio compares the same Fyne.
	$(GO) build -tags $(BUILD_TAGS) -o .tools/winbench/ ./tools/winbench ./tools/winbench/floor-minimal ./tools/winbench/floor-idle ./tools/winbench/floor-naive
	.tools/winbench/winbench -bin ./$(BIN) -floors .tools/winbench $(WINBENCH_FLAGS)

# PNGs of every state of the window into screenshots/ (and the goldens the
# UI tests compare against into ui/testdata/golden/).
screenshots:
	$(GO) test -tags $(TEST_TAGS) ./ui -run TestScreenshots -count=1 -args -update

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./protocol/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./session/script/
	$(GO) test -run '^$$' -fuzz '^FuzzReadFrame$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./session/copilot/jsonrpc/

# The load run of docs/reliability.md: the real relay (`pilotdesk serve`, the
# scripted agent, SQLite history in a temp dir) under 1,000 WebSocket
# connections and 100 conversations streaming at once for 60 s. It exits
# non-zero if any delivery was lost. LOAD_FLAGS adds flags, e.g.
# LOAD_FLAGS="-memory", "-kill-at 30s", "-conns 200 -convs 20 -duration 10s";
# "-nats -kill-at 30s": three `serve --nats` relays on a 3-node nats-server
# cluster on loopback, the connections spread over them, one SIGKILLed.
LOAD_FLAGS ?=
LOAD_BUILD = $(GO) build -tags $(TEST_TAGS) -o .tools/load/pilotdesk . && $(GO) build -o .tools/load/load ./tools/load
load: nats-server
	$(LOAD_BUILD)
	.tools/load/load -bin .tools/load/pilotdesk $(LOAD_FLAGS)

# Issue #33's attack on the owner at full scale (docs/reliability.md): the
# real relay under 20,000 idle keep-alive HTTP connections and 10,000
# WebSocket connections of one viewer token, then the owner connects (within
# 1 s) and runs a 100 KB prompt; it exits non-zero if the owner could not.
# About a minute. FLOOD_FLAGS adds flags, e.g. FLOOD_FLAGS="-addrs 400"
# (the connections from 400 loopback addresses) or "-idle 2000 -viewers 1000".
FLOOD_FLAGS ?=
flood:
	$(GO) build -tags $(TEST_TAGS) -o .tools/flood/pilotdesk . && $(GO) build -o .tools/flood/flood ./tools/flood
	.tools/flood/flood -bin .tools/flood/pilotdesk $(FLOOD_FLAGS)

# The fault-injection suite: every fault of `tools/load -fault` (a relay
# SIGKILLed or SIGSTOPped, the stream leader SIGKILLed, two of three nodes
# down, a rolling restart of the relays, a node or a relay cut off the
# network (both ways, or one) in a namespace of its own, as root),
# CHAOS_RUNS times each, with the seed and a verdict per run, the runs
# taking turns at CHAOS_PLACEMENTS (default "spread owner": a
# conversation's clients over every relay, most following it, then all on
# its owner) (docs/reliability.md, Faults).
chaos: nats-server
	$(LOAD_BUILD)
	scripts/chaos.sh

# A local 3-node nats-server cluster and two `pilotdesk serve --nats` relays
# on 127.0.0.1, for a person to try several relays sharing conversations
# (docs/operations.md): prints the relays' URLs and token; Ctrl-C stops
# everything. State in .tools/cluster; `scripts/cluster.sh --dry-run` only
# writes and checks the configurations.
cluster: nats-server
	@scripts/cluster.sh

$(FYNE):
	GOBIN=$(CURDIR)/.tools/bin $(GO) install fyne.io/tools/cmd/fyne@$(FYNE_TOOL_VERSION)

# The Linux package: dist/pilotdesk.tar.xz with the binary, the icon and a
# .desktop entry (and a Makefile whose user-install target `make install` uses).
package: deps $(FYNE)
	$(GO) build -tags $(BUILD_TAGS) -trimpath -ldflags "-s -w $(LDFLAGS)" -o dist/linux/pilotdesk .
	@# fyne package wraps the binary built above (its own build would not
	@# set the version) and writes pilotdesk.tar.xz here.
	@# It also rewrites FyneApp.toml with the build number bumped; the build
	@# number is ours to set, so the file is put back as it was.
	cp FyneApp.toml dist/FyneApp.toml.orig
	$(FYNE) package --os linux --exe dist/linux/pilotdesk --name pilotdesk \
		--icon assets/icon.png --app-id io.github.pilotdesk --app-version $(VERSION) --app-build $(BUILD) --release; \
		status=$$?; mv dist/FyneApp.toml.orig FyneApp.toml; exit $$status
	mv pilotdesk.tar.xz dist/pilotdesk.tar.xz
	@echo "package: dist/pilotdesk.tar.xz"

# Installs the package for the current user (~/.local): the app appears in the
# desktop's menu and starts by double-click.
install: package
	rm -rf dist/install && mkdir -p dist/install
	tar -xJf dist/pilotdesk.tar.xz -C dist/install
	$(MAKE) -C dist/install/pilotdesk user-install

# Windows, cross-built on Linux without Docker (scripts/package-windows.sh,
# docs/windows.md): MinGW-w64 for Fyne's cgo driver, NSIS for the installer.
# Writes dist/pilotdesk-setup-$(VERSION).exe (per user, no administrator)
# and dist/pilotdesk-$(VERSION)-windows-amd64.zip; signed when
# WINDOWS_SIGN_PFX and WINDOWS_SIGN_PASSWORD_FILE are set.
package-windows:
	scripts/package-windows.sh

# macOS needs a Mac: Fyne's driver links Apple's Cocoa and OpenGL
# frameworks, which only Xcode's SDK has (docs/windows.md says what the Mac
# needs). On a Mac with Xcode's command-line tools this builds the app
# bundle for the Mac's own architecture; CI builds only the window-less
# serve and chat for darwin (scripts/check-windows.sh).
package-darwin: $(FYNE)
	@test "$$(uname -s)" = Darwin || { echo "package-darwin: run this on a Mac with Xcode's command-line tools (xcode-select --install); docs/windows.md"; exit 1; }
	cp FyneApp.toml dist/FyneApp.toml.orig 2>/dev/null || { mkdir -p dist && cp FyneApp.toml dist/FyneApp.toml.orig; }
	$(FYNE) package --os darwin --tags $(BUILD_TAGS) --name pilotdesk --icon assets/icon.png \
		--app-id io.github.pilotdesk --app-version $(VERSION) --app-build $(BUILD) --release; \
		status=$$?; mv dist/FyneApp.toml.orig FyneApp.toml; exit $$status
	mkdir -p dist && rm -rf dist/pilotdesk.app && mv pilotdesk.app dist/
	@echo "package-darwin: dist/pilotdesk.app"

clean:
	rm -f $(BIN)
	rm -rf .tools dist
