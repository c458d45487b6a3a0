package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// shownName is the file in the data dir where the window says which
// conversation it shows, so that `pilotdesk chat` attached to the window's
// relay opens that one rather than a new, empty one.
const shownName = "window.json"

// remoteShownPref, followed by a remote relay's URL, is the preference
// that holds the conversation the window showed last on that relay (the
// window goes back to it, as to shownName's on a local data dir).
const remoteShownPref = "window.shown."

// shownConversation is what shownName holds: the window's process (the
// file counts only while that process runs the relay the chat attaches
// to) and its conversation.
type shownConversation struct {
	PID            int    `json:"pid"`
	ConversationID string `json:"conversationId"`
}

// rememberShown writes the conversation the window shows to dir.
func rememberShown(dir, id string, logger *slog.Logger) {
	b, err := json.Marshal(shownConversation{PID: os.Getpid(), ConversationID: id})
	if err == nil {
		err = writePrivate(filepath.Join(dir, shownName), b)
	}
	if err != nil {
		logger.Debug("could not note the conversation the window shows", "err", err)
	}
}

// readShown is what dir's shownName holds (zero if nothing readable).
func readShown(dir string) shownConversation {
	var s shownConversation
	if b, err := os.ReadFile(filepath.Join(dir, shownName)); err == nil && json.Unmarshal(b, &s) != nil {
		return shownConversation{}
	}
	return s
}

// lastShown is the conversation a window on dir showed last, whichever
// process it was: a window starting there goes back to it, or else to the
// latest conversation, as a chat attached to it does (ui.Options.Reopen).
func lastShown(dir string) string { return readShown(dir).ConversationID }

// attachConversation is the conversation a chat attached to the relay of
// another process (r) opens without --conversation: the one that
// process's window shows, else the latest one on the relay, else "" (a
// new one).
func attachConversation(ctx context.Context, dir string, r runningRelay, ccfg client.Config, logger *slog.Logger) string {
	if s := readShown(dir); s.PID == r.PID && s.ConversationID != "" {
		return s.ConversationID
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ccfg.Kind = protocol.ClientTerminal
	c, err := ccfg.Dial(ctx)
	if err != nil {
		logger.Warn("chat: could not ask the relay for its latest conversation", "err", err)
		return ""
	}
	defer c.Close()
	if err := c.ListPage(ctx, 1, ""); err != nil {
		return ""
	}
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				return ""
			}
			if l, ok := ev.Data.(*protocol.Conversations); ok {
				if len(l.Conversations) == 0 {
					return ""
				}
				return l.Conversations[0].ConversationID
			}
		case <-ctx.Done():
			return ""
		}
	}
}
