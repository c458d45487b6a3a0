package chat

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// listPageSize is how many conversations /list and /more show at a time:
// a screenful, where the relay's own page (200) would scroll away.
const listPageSize = 50

// conversationList is what /list and /more showed: the conversations,
// numbered for /switch N, /more's pages continuing the numbers of the one
// before, and the cursor of the next page. Like all of repl's state it
// belongs to the loop goroutine.
type conversationList struct {
	shown []protocol.ConversationInfo // nil before the first /list
	next  string                      // the cursor of the page /more asks for; "" when there is none
	// appending: the page asked for is /more's, which continues shown.
	appending bool
}

// ask returns the cursor of the page to ask for: /list's the first,
// /more's (more) the next; ok false when /more has nothing left.
func (l *conversationList) ask(more bool) (cursor string, ok bool) {
	if more {
		if l.next == "" {
			return "", false
		}
		cursor = l.next
	}
	l.appending = cursor != ""
	return cursor, true
}

// add takes the page the relay sent and returns how many conversations
// come before it in the numbering (0 for /list's).
func (l *conversationList) add(page *protocol.Conversations) (start int) {
	if l.appending {
		start = len(l.shown)
		l.shown = append(l.shown, page.Conversations...)
	} else {
		l.shown = page.Conversations
	}
	l.appending = false
	l.next = page.NextCursor
	return start
}

// pickConversation reads /switch's argument: a number from the last /list
// or a conversation ID. problem says what is wrong with it, for the user.
func (l *conversationList) pick(arg string) (id, problem string) {
	if isNumber(arg) {
		if l.shown == nil {
			return "", "Run /list first, then /switch N with a number from it."
		}
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > len(l.shown) {
			return "", fmt.Sprintf("There is no conversation %s: /list shows %d.", arg, len(l.shown))
		}
		return l.shown[n-1].ConversationID, ""
	}
	if _, err := uuid.Parse(arg); err != nil {
		return "", fmt.Sprintf("%q is neither a number from /list nor a conversation ID.", arg)
	}
	return arg, ""
}

// showList prints a page of the list, /list's or /more's, and keeps it
// for /switch N: /more's pages continue the numbers of the one before.
func (r *repl) showList(page *protocol.Conversations) {
	start := r.list.add(page)
	switch {
	case len(page.Conversations) == 0 && start == 0:
		r.note(styleDim, "No conversations yet.")
		return
	case len(page.Conversations) == 0:
		r.note(styleDim, "No more conversations.")
		return
	case start == 0 && page.NextCursor == "":
		r.note(styleBold, fmt.Sprintf("Conversations (%d):", len(page.Conversations)))
	default:
		r.note(styleBold, fmt.Sprintf("Conversations %d–%d:", start+1, len(r.list.shown)))
	}
	now := r.cfg.Now()
	for i, c := range page.Conversations {
		mark := "  "
		if c.ConversationID == r.conv {
			mark = r.scr.style(styleInfo, "* ")
		}
		title := conversation.EntryTitle(oneLine(c.Title))
		parts := []string{truncate(title, 60), string(c.Mode)}
		// What it is doing, as the window's and the web client's lists
		// say it ("working…"; a turn that waits on a question says so,
		// not that it works). The list entry carries no deadline.
		if status := conversation.EntryStatus(c.WaitingInput, time.Time{}, c.Streaming, now); status != "" {
			parts = append(parts, status)
		}
		if t, err := time.Parse(time.RFC3339Nano, c.UpdatedAt); err == nil {
			parts = append(parts, conversation.Ago(t, now))
		}
		if w := c.Workspace; w != nil { // its folder, and branch for a worktree
			folder := oneLine(w.Path)
			if w.Branch != "" {
				folder += " (" + oneLine(w.Branch) + ")"
			}
			parts = append(parts, folder)
		}
		r.scr.line(fmt.Sprintf("%s%s %s", mark, r.scr.style(styleInfo, fmt.Sprintf("%d)", start+i+1)), strings.Join(parts, " · ")))
	}
	if page.NextCursor != "" {
		r.note(styleDim, "/switch N opens one; /more lists more.")
		return
	}
	r.note(styleDim, "/switch N opens one.")
}
