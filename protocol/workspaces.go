package protocol

// Workspaces (docs/protocol.md, Workspaces): where a conversation's agent
// works, and the copilot:workspaces reply.

// Workspace isolations (docs/protocol.md, Workspaces): the agent works in
// the folder itself, or in a git worktree of its repository on a branch of
// its own.
const (
	IsolationNone     = "none"
	IsolationWorktree = "worktree"
)

// WorkspaceRequest is copilot:send's workspace: Path is an absolute
// folder on the relay's machine, Isolation IsolationNone ("" means it) or
// IsolationWorktree.
type WorkspaceRequest struct {
	Path      string `json:"path"`
	Isolation string `json:"isolation,omitempty"`
}

// Worktree reports whether the request asks for a worktree.
func (w *WorkspaceRequest) Worktree() bool { return w != nil && w.Isolation == IsolationWorktree }

// Workspace is a conversation's workspace once its first send fixed it:
// Path as the user chose it, Isolation, Dir where the agent runs (the
// worktree's folder, or the folder itself), and for a worktree its Branch
// and Base (the commit it started from).
type Workspace struct {
	Path      string `json:"path"`
	Isolation string `json:"isolation"`
	Dir       string `json:"dir"`
	Branch    string `json:"branch,omitempty"`
	Base      string `json:"base,omitempty"`
	// Ignored (ext): the worktree held files its .gitignore ignores
	// (.env, build output) when the last turn ended, which a delete does
	// not commit and loses with the worktree's folder.
	Ignored bool `json:"ignored,omitempty"`
}

// WorkspacesRequest is the (empty) data of the copilot:workspaces request.
type WorkspacesRequest struct{}

// Workspaces is the answer to copilot:workspaces: the relay's roots (the
// folders inside which a conversation may work), its default folder, and
// up to MaxRecentWorkspaces folders of recent conversations, newest first,
// so that a client that cannot browse the relay's disk can offer them.
type Workspaces struct {
	Roots   []string          `json:"roots"`
	Default string            `json:"default,omitempty"`
	Recent  []RecentWorkspace `json:"recent"`
}

// MaxRecentWorkspaces is the most folders copilot:workspaces lists.
const MaxRecentWorkspaces = 20

// RecentWorkspace is a folder of a recent conversation: Git whether it is
// inside a git repository, Branch the branch its checkout is on (absent
// when detached or not a repository), LastUsed (RFC 3339) when a
// conversation there was last updated.
type RecentWorkspace struct {
	Path     string `json:"path"`
	Git      bool   `json:"git"`
	Branch   string `json:"branch,omitempty"`
	LastUsed string `json:"lastUsed"`
}
