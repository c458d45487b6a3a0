// Command fake-acp is the fake ACP agent of session/acp's tests as a program
// of its own, for the tests that start a relay process with
// `pilotdesk serve --agent acp --acp-command PATH`: the web client's browser
// tests (web/e2e) use its "think" scenario, whose reasoning and plan no
// scripted agent can emit. Its prompts and environment are fakeagent's.
package main

import (
	"os"

	"github.com/pilotdesk/pilotdesk/session/acp/internal/fakeagent"
)

func main() {
	os.Exit(fakeagent.Main())
}
