package conversation

import (
	"path/filepath"
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Workspaces (docs/workspaces.md): each conversation works in a folder of
// its own, fixed by its first prompt. Before that prompt a client may
// hold the folder the user chose (WantWorkspace), which the first
// copilot:send carries; once the relay fixed it, Workspace says where.

// WantWorkspace records the folder the user chose for a conversation not
// on the relay yet: its first send carries it (Wanted). It changes
// nothing once the relay knows the conversation.
func (s *State) WantWorkspace(ws protocol.WorkspaceRequest) {
	if s.OnRelay || s.Workspace != nil {
		return
	}
	s.wanted = &ws
	s.listing()
}

// Wanted is the folder the conversation's first send names: the one the
// user chose, until the relay says which it fixed (nil: the relay's
// default folder, or the relay knows it already).
func (s *State) Wanted() *protocol.WorkspaceRequest {
	if s.Workspace != nil || s.wanted == nil {
		return nil
	}
	ws := *s.wanted
	return &ws
}

// Folder says where the conversation works, for a list and a title: the
// folder's name and, for a worktree, its branch ("api · pilotdesk/1a2b3c4d"),
// and the whole path; both "" when it is the relay's default folder and
// not fixed yet.
func (s *State) Folder() (label, path string) {
	switch {
	case s.Workspace != nil:
		return FolderLabel(s.Workspace.Path, s.Workspace.Branch, s.Workspace.Isolation == protocol.IsolationWorktree), s.Workspace.Dir
	case s.wanted != nil:
		return FolderLabel(s.wanted.Path, "", s.wanted.Worktree()), s.wanted.Path
	}
	return "", ""
}

// ChosenFolder is the folder the conversation was started in, as chosen
// (for a worktree, the repository's folder, not the worktree's): the
// conversations of one project share it. "" as for Folder.
func (s *State) ChosenFolder() string {
	switch {
	case s.Workspace != nil:
		return s.Workspace.Path
	case s.wanted != nil:
		return s.wanted.Path
	}
	return ""
}

// FolderLabel names a workspace in short: the folder's last element, and
// for a worktree its branch (or "new worktree" before the relay made it).
func FolderLabel(path, branch string, worktree bool) string {
	name := filepath.Base(filepath.Clean(path))
	if strings.Contains(path, `\`) && !strings.Contains(path, "/") {
		// A Windows relay's path, read on another system.
		name = path[strings.LastIndex(strings.TrimRight(path, `\`), `\`)+1:]
		name = strings.TrimRight(name, `\`)
	}
	switch {
	case !worktree:
		return name
	case branch != "":
		return name + " · " + branch
	}
	return name + " · new worktree"
}

// DeleteText is what deleting a conversation does, asked before a client
// deletes it (the window's File → Delete conversation…, the terminal's
// /delete), in the words of docs/workspaces.md: its history goes, for
// every device; a worktree's work is committed on its branch, which stays;
// a plain folder's files stay as they are. A worktree that holds files
// its .gitignore ignores (ws.Ignored: .env, build output) loses them:
// the commit leaves them out and they go with the folder.
func DeleteText(title string, ws *protocol.Workspace) string {
	text := "Delete “" + EntryTitle(title) + "” and its history, on the relay and for every device? This cannot be undone."
	switch {
	case ws != nil && ws.Isolation == protocol.IsolationWorktree && ws.Branch != "":
		text += " Its worktree's work is committed on its branch " + ws.Branch + ", which stays in the repository; the worktree's folder is removed."
	case ws != nil && ws.Isolation == protocol.IsolationWorktree:
		text += " Its worktree's work is committed on its branch, which stays in the repository; the worktree's folder is removed."
	case ws != nil && ws.Path != "":
		text += " The files in its folder, " + ws.Path + ", stay as they are."
	}
	if ws != nil && ws.Isolation == protocol.IsolationWorktree && ws.Ignored {
		text += " " + DeleteLosesIgnored
	}
	return text
}

// DeleteLosesIgnored ends DeleteText for a worktree that holds ignored
// files.
const DeleteLosesIgnored = "Files its .gitignore ignores (.env, build output) are not committed: they are lost with the folder."
