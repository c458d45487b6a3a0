package ui

// The agent a conversation runs on (the relay's list entry names it,
// conversation.State.Agent) shows in the second line of its entry in the
// sidebar and, for the conversation shown, in the window's title after the
// relay's name.

// showAgent puts the shown conversation's agent in the window's title,
// and before the relay's name the folder it works in (folder, its label:
// docs/workspaces.md). Fyne keeps the title, so nothing is set while it
// stays the same.
func (w *Window) showAgent(agent, folder string) {
	t := windowTitle(w.opts, w.clientURL())
	if agent != "" {
		t += " · " + agent
	}
	if folder != "" {
		t = folder + " — " + t
	}
	if w.win.Title() != t {
		w.win.SetTitle(t)
	}
}

// withAgent adds the agent to a sidebar entry's status line.
func withAgent(status, agent string) string {
	if agent == "" {
		return status
	}
	return status + " · " + agent
}
