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

.PHONY: run test deps copilot-cli build vet bench fuzz clean

run: deps build
	./$(BIN)

build:
	$(GO) build -o $(BIN) .

deps:
	@scripts/deps.sh

# The real Copilot CLI from npm, for the end-to-end tests; they are skipped,
# with the reason printed, only when this install fails.
copilot-cli:
	@scripts/install-copilot.sh || echo "make: the Copilot CLI could not be installed from npm; its end-to-end tests will be skipped"

vet:
	$(GO) vet -tags $(TEST_TAGS) ./...

test: deps copilot-cli vet
	$(GO) test -race -tags $(TEST_TAGS) -count=1 -timeout 25m ./...
	@# The real app (GL driver) must still build.
	$(GO) build -o /dev/null .

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./protocol/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./session/script/

clean:
	rm -f $(BIN)
	rm -rf .tools dist
