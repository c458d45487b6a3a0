package protocol

// Checkpoints (docs/protocol.md, Checkpoints): what an Act turn changed in
// its workspace, its diff, and putting the files back.

// Message types of checkpoints. copilot:diff names both the request and
// its reply.
const (
	TypeDiff     = "copilot:diff"
	TypeRestore  = "copilot:restore"
	TypeChanges  = "copilot:changes"
	TypeRestored = "copilot:restored"
)

// NoCheckpoint begins the copilot:error a relay sends, once until a
// snapshot of the conversation succeeds again, when a turn's snapshot
// failed (a folder it cannot snapshot, git failing, a disk full): the
// turn runs, and what it changes is not recorded. The window says it
// once in its own chrome too.
const NoCheckpoint = "this turn's changes are not recorded (no checkpoint)"

// File statuses of copilot:changes, copilot:restored and copilot:diff.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileDeleted  = "deleted"
	// FileSkipped: a restore left the file as it is (over 10 MiB, its
	// content not kept).
	FileSkipped = "skipped"
	// FileFailed: a restore could not write the file; Error says why.
	FileFailed = "failed"
)

// ChangedFile is one file of a change set.
type ChangedFile struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"`
	// Large (ext): the file is over 10 MiB (then Binary too), its
	// content not kept, so a restore leaves it as it is (FileSkipped).
	Large bool   `json:"large,omitempty"`
	Error string `json:"error,omitempty"`
}

// Changes is copilot:changes, an Act turn's last event before copilot:idle
// when it changed a file: MessageID of the turn's copilot:user_message,
// Checkpoint the snapshot before the turn, After the one after it.
type Changes struct {
	Header
	MessageID  string        `json:"messageId"`
	Checkpoint string        `json:"checkpoint"`
	After      string        `json:"after"`
	Files      []ChangedFile `json:"files"`
	Truncated  bool          `json:"truncated,omitempty"`
}

// Restored is copilot:restored: the workspace was put back as it was at
// Checkpoint; Undo is the snapshot taken first, Files what the restore did.
type Restored struct {
	Header
	Checkpoint string        `json:"checkpoint"`
	Undo       string        `json:"undo"`
	Files      []ChangedFile `json:"files"`
	// Truncated: more files changed than the event lists (1,000, or
	// what fits a frame).
	Truncated bool `json:"truncated,omitempty"`
}

// FilePatch is one file's unified diff in a copilot:diff reply.
type FilePatch struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Patch     string `json:"patch"`
	Truncated bool   `json:"truncated,omitempty"`
}

// DiffReply is the copilot:diff reply (not an event: no seq is stored).
type DiffReply struct {
	ConversationID string      `json:"conversationId"`
	Checkpoint     string      `json:"checkpoint"`
	Files          []FilePatch `json:"files"`
}

func (d *DiffReply) Conversation() string { return d.ConversationID }

// Diff is the copilot:diff request: the patches of the turn that began at
// Checkpoint, of one file when Path is given.
type Diff struct {
	ConversationID string `json:"conversationId"`
	Checkpoint     string `json:"checkpoint"`
	Path           string `json:"path,omitempty"`
}

// Restore is the copilot:restore request.
type Restore struct {
	ConversationID string `json:"conversationId"`
	Checkpoint     string `json:"checkpoint"`
}

func (d *Diff) Conversation() string    { return d.ConversationID }
func (d *Restore) Conversation() string { return d.ConversationID }
