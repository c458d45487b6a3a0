package relay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/shellquote"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
)

// A conversation's workspace (docs/protocol.md, Workspaces) is fixed by
// its first copilot:send: the folder the send names, checked against the
// relay's roots (relay/workspace), or a git worktree of it made then, or
// the relay's default folder when the send names none. It is stored with
// the conversation (history.Conversation.Workspace), shown on its list
// entry and in copilot:subscribed, and every agent session of the
// conversation opens in its Dir.

// Dir is the folder the conversation's agent works in: its workspace's
// Dir, "" before its first send fixed it. Whatever runs in the
// conversation's folder (the agent session, the checkpoints of its turns)
// reads it here.
func (c *conversation) Dir() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workspace.Dir
}

// protocolWorkspace is a stored workspace as the protocol shows it; nil
// before it is fixed.
func protocolWorkspace(w history.Workspace) *protocol.Workspace {
	if w.IsZero() {
		return nil
	}
	return &protocol.Workspace{Path: w.Path, Isolation: cmpOr(w.Isolation, protocol.IsolationNone), Dir: w.Dir, Branch: w.Branch, Base: w.Base, Ignored: w.Ignored}
}

// noteIgnored records, as an Act turn ends, whether the conversation's
// worktree holds files its .gitignore ignores (Workspace.Ignored): a
// delete does not commit them and removes them with the folder, and the
// clients' delete confirmations say so. Read before the turn's idle, whose
// list entry and subscriptions carry it. A git that fails leaves it as
// it was.
func (r *Relay) noteIgnored(ctx context.Context, conv *conversation, t *turn) {
	conv.mu.Lock()
	w, act := conv.workspace, t.cp.act
	conv.mu.Unlock()
	if !act || w.Isolation != workspace.Worktree || w.Worktree == "" {
		return
	}
	has, err := r.workspaces.HasIgnored(ctx, setWorkspace(w))
	if err != nil {
		r.log.Debug("relay: whether a worktree holds ignored files", "conversationId", conv.id, "err", err)
		return
	}
	conv.mu.Lock()
	if conv.workspace.Worktree == w.Worktree {
		conv.workspace.Ignored = has
	}
	conv.mu.Unlock()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func storedWorkspace(w workspace.Workspace) history.Workspace {
	return history.Workspace{Path: w.Path, Isolation: w.Isolation, Dir: w.Dir, Branch: w.Branch, Base: w.Base, Worktree: w.Root}
}

func setWorkspace(w history.Workspace) workspace.Workspace {
	return workspace.Workspace{Path: w.Path, Isolation: cmpOr(w.Isolation, workspace.None), Dir: w.Dir, Branch: w.Branch, Base: w.Base, Root: w.Worktree}
}

// describeWorkspace names a workspace for a sentence.
func describeWorkspace(path, isolation, branch string) string {
	if isolation == protocol.IsolationWorktree {
		if branch != "" {
			return fmt.Sprintf("a worktree of %s (branch %s)", path, branch)
		}
		return "a worktree of " + path
	}
	return path
}

// otherWorkspaceLocked is the refusal of a send naming another workspace
// than the conversation's, fixed already; "" when req is nil or the same.
func (c *conversation) otherWorkspaceLocked(req *protocol.WorkspaceRequest) string {
	if req == nil {
		return ""
	}
	w := c.workspace
	iso := cmpOr(req.Isolation, protocol.IsolationNone)
	if filepath.Clean(req.Path) == filepath.Clean(w.Path) && iso == cmpOr(w.Isolation, protocol.IsolationNone) {
		return ""
	}
	return fmt.Sprintf("this conversation works in %s; start a new conversation for %s",
		describeWorkspace(w.Path, w.Isolation, w.Branch), describeWorkspace(req.Path, iso, ""))
}

// errNotVisible: the conversation's folder is not there on this relay's
// machine (another relay's folder on a volume this one does not share),
// so this relay does not take the conversation over. A relay alone has no
// other relay to blame: the folder was moved or removed (a worktree
// removed by hand), and the sentence says how to go on.
type errNotVisible struct {
	w       history.Workspace
	cluster bool
}

func (e *errNotVisible) Error() string {
	w := e.w
	switch {
	case e.cluster:
		return fmt.Sprintf("this relay cannot see the conversation's folder %s (a folder every relay must see alike, on a shared volume), so it does not run it", w.Dir)
	case w.Isolation == protocol.IsolationWorktree && w.Worktree != "" && w.Branch != "":
		path, q := shellquote.Word(w.Path), shellquote.Word
		return fmt.Sprintf("the conversation's folder %s is gone: its worktree was removed (its branch %s keeps what was committed on it, and the turns' diffs what they changed). To go on here, put the worktree back (git -C %s worktree prune && git -C %s worktree add %s %s); or start a new conversation",
			w.Dir, w.Branch, path, path, q(w.Worktree), q(w.Branch))
	default:
		return fmt.Sprintf("the conversation's folder %s is gone (moved or removed): put it back to go on here, or start a new conversation", w.Dir)
	}
}

// visibleLocked is nil when the conversation's folder is there, or it has
// none yet.
func (c *conversation) visibleLocked() error {
	if c.workspace.IsZero() || workspace.Visible(setWorkspace(c.workspace)) {
		return nil
	}
	return &errNotVisible{w: c.workspace, cluster: c.r.cluster != nil}
}

// fixWorkspace fixes the workspace of conv, which startSend marked
// preparing, from d, and starts d's turn there; it returns the error to
// answer with. The folder is checked, and a worktree made, without the
// conversation's lock; a worktree made for a conversation deleted
// meanwhile is released again.
func (r *Relay) fixWorkspace(ctx context.Context, conv *conversation, d *protocol.Send, start func(*conversation) *protocol.Error) *protocol.Error {
	path, isolation := "", ""
	if d.Workspace != nil {
		path, isolation = d.Workspace.Path, d.Workspace.Isolation
	}
	w, err := r.workspaces.Fix(ctx, conv.id, path, isolation)
	var answer *protocol.Error
	fixed := false
	lockErr := r.withConversation(ctx, conv.id, func(c *conversation) {
		if c != conv {
			// Deleted while the workspace was made: the send went with it.
			answer = &protocol.Error{Code: protocol.CodeLimit, Type: protocol.TypeSend, ConversationID: conv.id,
				Message: "the conversation was deleted as its first send arrived: send again"}
			return
		}
		c.preparing, c.preparingID = false, ""
		if err != nil {
			return
		}
		c.workspace = storedWorkspace(w)
		fixed = true
		answer = start(c)
	})
	if lockErr != nil {
		conv.mu.Lock()
		conv.preparing, conv.preparingID = false, ""
		conv.mu.Unlock()
		answer = &protocol.Error{Code: protocol.CodeLimit, Type: protocol.TypeSend, ConversationID: conv.id, Message: "the send was cancelled"}
	}
	if err != nil {
		r.log.Info("relay: a workspace was refused", "conversationId", conv.id, "path", path, "isolation", isolation, "err", err)
		return &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeSend, ConversationID: conv.id, Message: err.Error()}
	}
	if !fixed && w.Root != "" {
		relCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if rerr := r.workspaces.Release(relCtx, w, ""); rerr != nil {
			r.log.Warn("relay: a worktree made for a send that started nothing could not be removed", "conversationId", conv.id, "err", rerr)
		}
	}
	return answer
}

// releaseWorkspace is what a delete does to the conversation's workspace:
// a worktree's work is committed on its branch (message: the title) and
// its folder removed (docs/workspaces.md). It never fails the delete: a
// worktree that could not be committed is left where it is, and the log
// says so.
func (c *conversation) releaseWorkspace() {
	c.mu.Lock()
	w, title := c.workspace, c.title
	c.mu.Unlock()
	if w.Isolation != workspace.Worktree {
		return
	}
	if title == "" {
		title = "pilotdesk conversation " + c.id
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.r.workspaces.Release(ctx, setWorkspace(w), title); err != nil {
		c.r.log.Warn("relay: deleting a conversation: its worktree", "conversationId", c.id, "err", err)
		return
	}
	c.r.log.Info("relay: a deleted conversation's work is committed on its branch", "conversationId", c.id, "branch", w.Branch)
}

// workspacesAnswer handles copilot:workspaces: the roots, the default
// folder, and the folders of the most recent conversations.
func (r *Relay) workspacesAnswer(c *conn) {
	type used struct {
		path string
		at   time.Time
	}
	var all []used
	for _, cv := range r.allConversations() {
		cv.mu.Lock()
		if w := cv.sent.workspace; !w.IsZero() && !cv.deleted.Load() {
			all = append(all, used{w.Path, cv.updatedAt})
		}
		cv.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b used) int { return b.at.Compare(a.at) })
	d := protocol.Workspaces{Roots: r.workspaces.Roots(), Default: r.workspaces.Default(), Recent: []protocol.RecentWorkspace{}}
	seen := map[string]bool{}
	for _, u := range all {
		key := filepath.Clean(u.path)
		if seen[key] {
			continue
		}
		seen[key] = true
		git, branch := workspace.GitInfo(u.path)
		d.Recent = append(d.Recent, protocol.RecentWorkspace{Path: u.path, Git: git, Branch: branch, LastUsed: protocol.FormatTime(u.at)})
		if len(d.Recent) == protocol.MaxRecentWorkspaces {
			break
		}
	}
	frame, err := protocol.Encode(protocol.TypeWorkspaces, &d)
	for len(frame) > protocol.MaxFrameBytes && len(d.Recent) > 0 {
		d.Recent = d.Recent[:len(d.Recent)/2] // paths of 4 KiB each: never in practice
		frame, err = protocol.Encode(protocol.TypeWorkspaces, &d)
	}
	if err != nil {
		r.log.Error("relay: encode copilot:workspaces", "err", err)
		return
	}
	c.enqueue(frame)
}

// notVisible is the answer to a command on a conversation whose folder
// this relay cannot see.
func notVisible(msgType, id string, err error) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeLimit, Type: msgType, ConversationID: id, Message: err.Error()}
}

// isNotVisible reports whether err says the folder is not here.
func isNotVisible(err error) bool {
	var nv *errNotVisible
	return errors.As(err, &nv)
}
