package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
)

// Checkpoints (docs/protocol.md, Checkpoints; docs/checkpoints.md): the
// relay snapshots an Act turn's folder when the turn starts and when it
// ends (relay/checkpoint), and sends what changed as copilot:changes, the
// turn's last event before copilot:idle; copilot:diff answers its patches,
// copilot:restore puts the folder back.

// turnCheckpoint is what a turn records of its folder. Guarded by the
// conversation's mu, but written only by the turn's goroutine.
type turnCheckpoint struct {
	dir    string // the folder; "" when the turn takes no snapshot
	before string // the snapshot when the turn started; "" if it failed
	// act: the turn ran in Act at some moment. A turn started in Plan is
	// snapshotted too, so that one switched to Act midway reports what it
	// changed from its start; one that stayed in Plan reports nothing
	// (its changes, if any, are not the agent's to claim).
	act bool
}

// checkpointDirLocked is the folder the conversation's turns change (its
// workspace's dir; the default folder while none is fixed): "" when
// checkpoints are off.
func (c *conversation) checkpointDirLocked() string {
	if c.r.checkpoints == nil {
		return ""
	}
	if c.workspace.Dir != "" {
		return c.workspace.Dir
	}
	return c.r.workDir
}

// checkpointRefsDirLocked is a folder of the repository that holds the
// conversation's snapshots, for deleting their refs: for a worktree, the
// folder the user chose in the repository, since the delete removes the
// worktree's own folder before it drops the refs (and git then no longer
// finds a repository there); the refs are the repository's, shared by
// all its worktrees. Otherwise checkpointDirLocked.
// A worktree's own folder is returned as gone, for the store to forget
// once the delete removed it.
func (c *conversation) checkpointRefsDirLocked() (dir, gone string) {
	if c.r.checkpoints != nil && c.workspace.Worktree != "" && c.workspace.Path != "" {
		return c.workspace.Path, c.workspace.Dir
	}
	return c.checkpointDirLocked(), ""
}

// checkpointReadDirLocked is the folder through which the conversation's
// snapshots are read (copilot:diff): its own, or, for a worktree whose
// folder is gone (removed by hand), the folder the user chose in its
// repository, which holds the same snapshots: a diff is then how to see,
// and get back, what the removal took with it.
func (c *conversation) checkpointReadDirLocked() string {
	if refs, gone := c.checkpointRefsDirLocked(); gone != "" && !workspace.Visible(setWorkspace(c.workspace)) {
		return refs
	}
	return c.checkpointDirLocked()
}

// snapshotBefore takes the snapshot of an Act turn's folder before its
// agent runs. A snapshot that fails lets the turn run and says so once
// (until a snapshot of the conversation succeeds again).
func (r *Relay) snapshotBefore(conv *conversation, t *turn) {
	if t.cp.dir == "" {
		return
	}
	before, err := r.checkpoints.Snapshot(t.ctx, t.cp.dir, conv.id)
	conv.mu.Lock()
	defer conv.mu.Unlock()
	if err != nil {
		t.cp.dir = ""
		if t.ctx.Err() == nil {
			conv.checkpointFailedLocked(err)
		}
		return
	}
	t.cp.before = before
	conv.cpFailed = false
}

// checkpointFailedLocked logs a failed snapshot and says so to the
// conversation once. Not while its history store has failed: then its turn
// ends with the store's copilot:error and copilot:idle and nothing else
// (storefail.go, keptWhenFailed), and the notice is left to the next
// snapshot that fails once the store writes again.
func (c *conversation) checkpointFailedLocked(err error) {
	c.r.log.Warn("relay: a turn's snapshot failed: its changes are not recorded", "conversationId", c.id, "err", err)
	if c.cpFailed || c.failure.failed {
		return
	}
	c.cpFailed = true
	c.emitErrorLocked(fmt.Sprintf("%s: %v", protocol.NoCheckpoint, err))
}

// snapshotAfter takes the snapshot after the turn and returns the
// copilot:changes to send before its copilot:idle, nil when the turn
// changed nothing (or took no snapshot).
func (r *Relay) snapshotAfter(conv *conversation, t *turn) *protocol.Changes {
	conv.mu.Lock()
	act := t.cp.act
	conv.mu.Unlock()
	if t.cp.dir == "" || t.cp.before == "" || !act {
		return nil
	}
	// Not the turn's context: an aborted turn's changes count too.
	ctx := context.WithoutCancel(t.ctx)
	after, files, truncated, err := r.checkpoints.SnapshotTurn(ctx, t.cp.dir, conv.id, t.cp.before)
	if err != nil {
		conv.mu.Lock()
		conv.checkpointFailedLocked(err)
		conv.mu.Unlock()
		return nil
	}
	if len(files) == 0 {
		return nil
	}
	ch := &protocol.Changes{MessageID: t.messageID, Checkpoint: t.cp.before, After: after, Files: changedFiles(files), Truncated: truncated}
	fitChanges(ch)
	return ch
}

func changedFiles(files []checkpoint.File) []protocol.ChangedFile {
	out := make([]protocol.ChangedFile, len(files))
	for i, f := range files {
		out[i] = protocol.ChangedFile{Path: f.Path, Status: f.Status, Additions: f.Additions, Deletions: f.Deletions, Binary: f.Binary, Large: f.Large, Error: f.Error}
	}
	return out
}

// frameRoom is what a reply leaves out of the frame limit for its envelope.
const frameRoom = 4 << 10

// fitChanges drops the last files of a change set whose frame would be
// over the limit (paths of thousands of bytes), marking it truncated.
func fitChanges(ch *protocol.Changes) {
	for {
		frame, err := protocol.Encode(protocol.TypeChanges, ch)
		if err != nil || len(frame) <= protocol.MaxFrameBytes-frameRoom || len(ch.Files) == 0 {
			return
		}
		ch.Files = ch.Files[:len(ch.Files)*3/4]
		ch.Truncated = true
	}
}

// checkpointError is the answer to a diff or restore that failed.
func checkpointError(msgType, id string, err error) *protocol.Error {
	code := protocol.CodeInvalidField
	msg := err.Error()
	if errors.Is(err, checkpoint.ErrUnknown) {
		msg = "checkpoint: " + msg + " (use a checkpoint of this conversation's copilot:changes or copilot:restored)"
	}
	return &protocol.Error{Code: code, Type: msgType, ConversationID: id, Message: msg}
}

// checkpointsOff answers a diff or restore when the relay takes no
// snapshots.
func (r *Relay) checkpointsOff(msgType, id string) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeInvalidField, Type: msgType, ConversationID: id, Message: r.checkpointsOffWhy}
}

// diff handles copilot:diff: any relay answers it, from the folder's
// repository.
func (r *Relay) diff(c *conn, d *protocol.Diff) {
	if r.checkpoints == nil {
		c.sendError(r.checkpointsOff(protocol.TypeDiff, d.ConversationID))
		return
	}
	dir := ""
	if conv := r.lookupConversation(d.ConversationID); conv != nil {
		conv.mu.Lock()
		dir = conv.checkpointReadDirLocked()
		conv.mu.Unlock()
	}
	if dir == "" {
		c.sendError(&protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeDiff, ConversationID: d.ConversationID,
			Message: "checkpoint " + d.Checkpoint + ": not a checkpoint of this conversation (it has no turn that changed files)"})
		return
	}
	budget := protocol.MaxFrameBytes - frameRoom
	for {
		patches, err := r.checkpoints.Diff(c.ctx, dir, d.ConversationID, d.Checkpoint, d.Path, budget)
		if err != nil {
			c.sendError(checkpointError(protocol.TypeDiff, d.ConversationID, err))
			return
		}
		reply := protocol.DiffReply{ConversationID: d.ConversationID, Checkpoint: d.Checkpoint, Files: make([]protocol.FilePatch, len(patches))}
		for i, p := range patches {
			reply.Files[i] = protocol.FilePatch{Path: p.Path, Status: p.Status, Patch: p.Patch, Truncated: p.Truncated}
		}
		frame, err := protocol.Encode(protocol.TypeDiff, &reply)
		if err != nil {
			r.log.Error("relay: encode a diff", "err", err)
			return
		}
		if len(frame) <= protocol.MaxFrameBytes || budget < 1024 {
			// Escaped text (control bytes, quotes) grows on the wire:
			// the patches are cut shorter until the frame fits.
			c.enqueue(frame)
			return
		}
		budget = budget * protocol.MaxFrameBytes / len(frame) * 9 / 10
	}
}

// restore handles copilot:restore: the owner of the conversation runs it.
func (r *Relay) restore(c *conn, d *protocol.Restore) {
	if r.forward(c, protocol.TypeRestore, d.ConversationID, d, nil) {
		return
	}
	if e := r.restoreConversation(c.ctx, d); e != nil {
		c.sendError(e)
	}
}

// restoreConversation puts the conversation's folder back as it was at
// d.Checkpoint and emits copilot:restored; no turn starts meanwhile.
func (r *Relay) restoreConversation(ctx context.Context, d *protocol.Restore) *protocol.Error {
	if r.checkpoints == nil {
		return r.checkpointsOff(protocol.TypeRestore, d.ConversationID)
	}
	conv := r.lookupConversation(d.ConversationID)
	if conv == nil {
		return &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeRestore, ConversationID: d.ConversationID,
			Message: "checkpoint " + d.Checkpoint + ": not a checkpoint of this conversation (it has no history here)"}
	}
	conv.mu.Lock()
	if e := conv.lostLocked(protocol.TypeRestore); e != nil {
		conv.mu.Unlock()
		return e
	}
	switch {
	case conv.streaming || conv.preparing || conv.restoring:
		conv.mu.Unlock()
		return &protocol.Error{Code: protocol.CodeConversationBusy, Type: protocol.TypeRestore, ConversationID: d.ConversationID,
			Message: "the conversation is streaming a reply (or restoring): wait for copilot:idle, or abort it, then restore"}
	}
	dir := conv.checkpointDirLocked()
	conv.restoring = true
	conv.mu.Unlock()
	defer func() {
		conv.mu.Lock()
		conv.restoring = false
		conv.mu.Unlock()
	}()
	if dir == "" {
		return &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeRestore, ConversationID: d.ConversationID,
			Message: "checkpoint " + d.Checkpoint + ": not a checkpoint of this conversation"}
	}
	undo, files, err := r.checkpoints.Restore(context.WithoutCancel(ctx), dir, d.ConversationID, d.Checkpoint)
	if err != nil {
		return checkpointError(protocol.TypeRestore, d.ConversationID, err)
	}
	ev := protocol.Restored{Checkpoint: d.Checkpoint, Undo: undo, Files: changedFiles(files)}
	if len(ev.Files) > checkpoint.MaxFiles {
		// A list that is cut keeps the files it could not write.
		failedFirst := func(f protocol.ChangedFile) int {
			if f.Status == protocol.FileFailed {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(ev.Files, func(a, b protocol.ChangedFile) int { return cmp.Compare(failedFirst(a), failedFirst(b)) })
		ev.Files, ev.Truncated = ev.Files[:checkpoint.MaxFiles], true
	}
	for {
		frame, err := protocol.Encode(protocol.TypeRestored, &ev)
		if err != nil || len(frame) <= protocol.MaxFrameBytes-frameRoom || len(ev.Files) == 0 {
			break
		}
		ev.Files, ev.Truncated = ev.Files[:len(ev.Files)*3/4], true
	}
	conv.mu.Lock()
	conv.emitLocked(protocol.TypeRestored, &ev.Header, &ev)
	conv.mu.Unlock()
	return nil
}

// dropCheckpoints deletes the refs of a deleted conversation's snapshots.
func (r *Relay) dropCheckpoints(conv *conversation, dir, gone string) {
	if r.checkpoints == nil || dir == "" {
		return
	}
	// Not the relay's context: a delete is finished even at shutdown.
	if err := r.checkpoints.Delete(context.WithoutCancel(r.ctx), dir, conv.id); err != nil {
		r.log.Warn("relay: the checkpoints of a deleted conversation were not removed", "conversationId", conv.id, "err", err)
	}
	if gone == "" {
		return
	}
	if err := r.checkpoints.Forget(gone); err != nil {
		r.log.Warn("relay: what the checkpoints kept of a deleted worktree was not removed", "conversationId", conv.id, "err", err)
	}
}

// pruneCheckpoints deletes, on a goroutine of its own, the refs of the
// snapshots of conversations the relay does not hold (deleted while it was
// not running, or dropped by --history-max-age before it started). One
// relay alone: in a cluster another relay may hold them.
func (r *Relay) pruneCheckpoints() {
	r.mu.Lock()
	live := map[string]bool{}
	for id := range r.convs {
		live[checkpoint.RefName(id)] = true
	}
	r.mu.Unlock()
	r.track(&r.work, func() {
		if err := r.checkpoints.Prune(r.ctx, func(c string) bool { return live[c] }); err != nil && r.ctx.Err() == nil {
			r.log.Warn("relay: pruning the checkpoints of conversations that are gone", "err", err)
		}
	})
}
