package relay_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/session"
)

// labeled is an agent that names itself for people.
type labeled struct{ session.Agent }

func (labeled) Label() string { return "opencode (ACP)" }

// The list's entries name the agent the relay runs the conversation with:
// its Label when it has one, else its Name; the watchers' notices too.
func TestListNamesTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*relay.Config)
		want string
	}{
		{"name", nil, "fake"},
		{"label", func(c *relay.Config) { c.Agent = labeled{c.Agent} }, "opencode (ACP)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, tc.mod)
			cl := e.dial()
			cl.Send("copilot:list", map[string]any{"watch": true})
			cl.WaitFor("copilot:conversations", nil)
			makeConversations(t, cl, "a", 1)
			if n := cl.WaitFor("copilot:conversation", nil); n.Field("agent") != tc.want {
				t.Errorf("notice %s, want agent %q", n.Raw, tc.want)
			}
			page := listPage(t, cl, nil)
			if len(page.Conversations) != 1 || page.Conversations[0].Agent != tc.want {
				t.Errorf("list = %+v, want agent %q", page.Conversations, tc.want)
			}
		})
	}
}
