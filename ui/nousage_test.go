package ui

import (
	"context"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/session"
)

// noUsageAgent answers each prompt and says, as the ACP backend does for
// Codex, that it reports no usage.
type noUsageAgent struct{}

func (noUsageAgent) Name() string  { return "acp" }
func (noUsageAgent) Label() string { return "Codex (ACP)" }
func (noUsageAgent) Close() error  { return nil }
func (noUsageAgent) Open(_ context.Context, _ string, _ session.OpenOptions, h session.Host) (session.Session, error) {
	return noUsageSession{h: h}, nil
}

type noUsageSession struct{ h session.Host }

func (s noUsageSession) Run(context.Context, session.Turn) error {
	s.h.Emit(session.Message{MessageID: "m1", Content: "Written."})
	s.h.Emit(session.Usage{Unreported: true})
	return nil
}

func (noUsageSession) Close(context.Context) error { return nil }

// TestUsageLineAgentReportsNone: with an agent that reports no usage, the
// window's usage line says so once the agent said it, in the fold's words,
// instead of "No usage reported yet" (which read as if figures would come).
func TestUsageLineAgentReportsNone(t *testing.T) {
	h := newHarness(t, harnessConfig{theme: FixedVariant(theme.DefaultTheme(), theme.VariantLight), fakeClock: true,
		size: fyne.NewSize(1100, 720), relay: relay.Config{Agent: noUsageAgent{}}})
	if got := h.w.status.usage.String(); got != "No usage reported yet" {
		t.Fatalf("before a turn the usage line says %q", got)
	}
	h.send("Write the file hello.")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.waitFor("the usage line", func() bool { return h.w.status.usage.String() == conversation.NoUsageText })
}
