package ui

import (
	"strings"
	"testing"
)

// The About dialog (about.go).

func TestAboutDialog(t *testing.T) {
	h := newHarness(t, harnessConfig{options: Options{Version: "1.2.3", Agent: "script"}})
	h.w.ShowAbout()
	if h.w.about == nil || len(h.w.Window().Canvas().Overlays().List()) == 0 {
		t.Fatal("no About dialog")
	}
	all := strings.Join(texts(aboutContent(aboutInfo{Version: "1.2.3", RelayURL: h.client.URL(), Agent: "script"})), "\n")
	for _, want := range []string{
		"Version 1.2.3",
		"embedded in this app, " + h.client.URL(),
		"built-in demo (scripted)",
		"Project site <" + ProjectURL + ">",
		"GitHub Copilot CLI <" + CopilotCLIURL + ">",
		"License <" + LicenseURL + ">",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("About lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, h.srv.Token) {
		t.Error("About shows the token")
	}
	remote := strings.Join(texts(aboutContent(aboutInfo{Version: "1.2.3", RelayURL: "wss://relay.example.com/ws", Remote: true})), "\n")
	if !strings.Contains(remote, "remote, wss://relay.example.com/ws") || !strings.Contains(remote, "chosen by the remote relay") {
		t.Errorf("remote About:\n%s", remote)
	}
}
