package relay_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// workspaces makes a relay's workspaces: root the one root and default
// folder, worktrees under data.
func workspaces(t testing.TB, root, data string) *workspace.Set {
	t.Helper()
	ws, err := workspace.New(workspace.Options{Roots: []string{root}, Default: root, WorktreeDir: filepath.Join(data, "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func mkdir(t testing.TB, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// gitRepo makes a git repository with one commit (notes.txt holding
// "original\n") in dir, on branch main.
func gitRepo(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	mkdir(t, dir)
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "first")
	return dir
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// workspaceOf is a frame's workspace object (nil if none).
func workspaceOf(f relaytest.Frame) map[string]any {
	w, _ := f.Field("workspace").(map[string]any)
	return w
}

// A conversation's first send fixes its workspace: the agent session opens
// there, copilot:subscribed and the list say it; a later send may repeat
// it or leave it out, and one naming another folder is refused and starts
// nothing. A send with no workspace works in the default folder.
func TestWorkspaceFixedByFirstSend(t *testing.T) {
	root := t.TempDir()
	a, b := mkdir(t, filepath.Join(root, "a")), mkdir(t, filepath.Join(root, "b"))
	e := start(t, func(c *relay.Config) { c.Workspaces = workspaces(t, root, t.TempDir()) })
	cl := e.dial()

	e.startTurn(cl, "w1", "first", map[string]any{"workspace": map[string]any{"path": a}}).finish(nil)
	cl.WaitFor("copilot:idle", nil)
	if opens := e.agent.openCalls(); len(opens) != 1 || opens[0].Opts.WorkDir != a {
		t.Fatalf("the agent session opened with %+v, want WorkDir %s", opens, a)
	}
	want := map[string]any{"path": a, "isolation": "none", "dir": a}
	other, sub := e.subscribe("w1")
	if w := workspaceOf(sub); len(w) != 3 || w["path"] != want["path"] || w["isolation"] != "none" || w["dir"] != a {
		t.Fatalf("copilot:subscribed %s", sub.Raw)
	}
	other.Close()
	cl.Send("copilot:list", nil)
	list := cl.WaitFor("copilot:conversations", nil)
	entries := list.Field("conversations").([]any)
	if w, _ := entries[0].(map[string]any)["workspace"].(map[string]any); w["path"] != a || w["dir"] != a {
		t.Fatalf("list %s", list.Raw)
	}

	// The same again, or none: the turn runs.
	e.startTurn(cl, "w1", "again", map[string]any{"workspace": map[string]any{"path": a + "/", "isolation": "none"}}).finish(nil)
	cl.WaitFor("copilot:idle", nil)
	e.startTurn(cl, "w1", "and again", nil).finish(nil)
	cl.WaitFor("copilot:idle", nil)

	// Another folder: refused, nothing starts.
	cl.Send("copilot:send", map[string]any{"conversationId": "w1", "prompt": "elsewhere", "workspace": map[string]any{"path": b}})
	f := cl.WaitFor("error", nil)
	if f.Field("code") != protocol.CodeInvalidField || !strings.Contains(f.Field("message").(string), "this conversation works in "+a+"; start a new conversation for "+b) {
		t.Fatalf("another folder: %s", f.Raw)
	}
	expectQuiet(t, cl)

	// No workspace at all: the default folder.
	e.startTurn(cl, "w2", "default", nil).finish(nil)
	cl.WaitFor("copilot:idle", nil)
	opens := e.agent.openCalls()
	if last := opens[len(opens)-1]; last.ConversationID != "w2" || last.Opts.WorkDir != root {
		t.Fatalf("a send with no workspace opened %+v, want the default %s", last, root)
	}

	// copilot:workspaces: the roots and both folders, newest first.
	cl.Send("copilot:workspaces", nil)
	ans := cl.WaitFor("copilot:workspaces", nil)
	var ws protocol.Workspaces
	ans.Decode(t, &ws)
	if len(ws.Roots) != 1 || ws.Roots[0] != root || ws.Default != root || len(ws.Recent) != 2 ||
		ws.Recent[0].Path != root || ws.Recent[1].Path != a || ws.Recent[1].Git || ws.Recent[1].LastUsed == "" {
		t.Fatalf("copilot:workspaces %s", ans.Raw)
	}
}

// Every folder a send may not use gets invalid_field with a sentence
// naming the roots, and starts nothing: no user message, no agent
// session, no list entry.
func TestWorkspaceRefusals(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	plain := mkdir(t, filepath.Join(root, "plain"))
	empty := mkdir(t, filepath.Join(root, "empty"))
	if err := os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, filepath.Join(root, "repo"))
	git(t, empty, "init", "--quiet")
	e := start(t, func(c *relay.Config) { c.Workspaces = workspaces(t, root, t.TempDir()) })
	cl := e.dial()
	cl.Send("copilot:list", map[string]any{"watch": true})
	cl.WaitFor("copilot:conversations", nil)

	for i, tc := range []struct {
		ws    map[string]any
		says  string
		roots bool
	}{
		{map[string]any{"path": "relative/folder"}, "not an absolute path", true},
		{map[string]any{"path": filepath.Join(root, "missing")}, "does not exist", true},
		{map[string]any{"path": filepath.Join(root, "file")}, "is a file, not a folder", true},
		{map[string]any{"path": outside}, "outside the folders", true},
		{map[string]any{"path": filepath.Join(root, "..", filepath.Base(outside))}, "outside the folders", true},
		{map[string]any{"path": filepath.Join(root, "link")}, "it leads to " + outside, true},
		{map[string]any{"path": plain, "isolation": "worktree"}, "not inside a git repository", false},
		{map[string]any{"path": empty, "isolation": "worktree"}, "has no commit yet", false},
	} {
		id := "refused-" + string(rune('a'+i))
		cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "hi", "workspace": tc.ws})
		f := cl.WaitFor("error", nil)
		msg, _ := f.Field("message").(string)
		if f.Field("code") != protocol.CodeInvalidField || f.Field("type") != protocol.TypeSend || f.Field("conversationId") != id ||
			!strings.Contains(msg, tc.says) || (tc.roots && !strings.Contains(msg, root)) {
			t.Errorf("workspace %v: %s; want invalid_field saying %q", tc.ws, f.Raw, tc.says)
		}
		expectQuiet(t, cl) // no user message, no list notice
	}
	if n := len(e.agent.openCalls()); n != 0 {
		t.Fatalf("%d agent sessions opened for refused sends", n)
	}
	// A refused first send fixes nothing: the next one may choose.
	e.startTurn(cl, "refused-a", "now here", map[string]any{"workspace": map[string]any{"path": plain}}).finish(nil)
	cl.WaitFor("copilot:idle", nil)
}

// A conversation keeps its workspace across a restart of the relay: the
// list says it, and its next agent session opens there again.
func TestWorkspaceSurvivesRestart(t *testing.T) {
	checkNoLeaks(t)
	dir, root := t.TempDir(), t.TempDir()
	a := mkdir(t, filepath.Join(root, "a"))
	run := func(fn func(cl *relaytest.Client, agent *fakeAgent)) {
		t.Helper()
		store, err := sqlite.Open(context.Background(), dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		agent := newFakeAgent()
		srv := relaytest.Start(t, relay.Config{Agent: agent, Store: store, Workspaces: workspaces(t, root, dir)})
		fn(srv.Dial(t), agent)
		srv.Close()
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(func(cl *relaytest.Client, agent *fakeAgent) {
		cl.Send("copilot:send", map[string]any{"conversationId": "kept", "prompt": "hi", "workspace": map[string]any{"path": a}})
		agent.nextTurn(t).finish(nil)
		cl.WaitFor("copilot:idle", nil)
	})
	run(func(cl *relaytest.Client, agent *fakeAgent) {
		cl.Send("copilot:list", nil)
		list := cl.WaitFor("copilot:conversations", nil)
		if w, _ := list.Field("conversations").([]any)[0].(map[string]any)["workspace"].(map[string]any); w["path"] != a || w["dir"] != a {
			t.Fatalf("list after a restart %s", list.Raw)
		}
		cl.Send("copilot:send", map[string]any{"conversationId": "kept", "prompt": "again"})
		agent.nextTurn(t).finish(nil)
		cl.WaitFor("copilot:idle", nil)
		if opens := agent.openCalls(); len(opens) != 1 || opens[0].Opts.WorkDir != a || !opens[0].Opts.Resume {
			t.Fatalf("after a restart the session opened with %+v", opens)
		}
		cl.Send("copilot:send", map[string]any{"conversationId": "kept", "prompt": "b", "workspace": map[string]any{"path": root}})
		if f := cl.WaitFor("error", nil); f.Field("code") != protocol.CodeInvalidField {
			t.Fatalf("another folder after a restart: %s", f.Raw)
		}
	})
}

// twoEdits is a script whose turns write notes.txt, each its own way, and
// then wait on a question, so that both conversations are running at once
// when the test looks at their folders.
const twoEdits = `{"turns": [
  {"match": "alpha", "steps": [
    {"tool": {"name": "edit", "arguments": {"path": "notes.txt"}, "write": {"path": "notes.txt", "content": "alpha was here\n"}}},
    {"ask": {"question": "Keep going?", "choices": ["yes", "no"]}},
    {"delta": "alpha done in {{workspace}}"}
  ]},
  {"match": "beta", "steps": [
    {"tool": {"name": "edit", "arguments": {"path": "notes.txt"}, "write": {"path": "notes.txt", "content": "beta was here\n"}}},
    {"ask": {"question": "Keep going?", "choices": ["yes", "no"]}},
    {"delta": "beta done in {{workspace}}"}
  ]}
]}`

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two conversations in worktrees of one repository run at once through
// the relay, each editing the same file its own way: each worktree holds
// its own version, on its own branch, and the user's checkout (status,
// HEAD, branch, the file) is as it was. Deleting a conversation commits
// its worktree's work on its branch (message: the title) and removes the
// folder; the branch stays.
func TestWorktreesInParallel(t *testing.T) {
	checkNoLeaks(t)
	home := t.TempDir()
	user := gitRepo(t, filepath.Join(home, "project"))
	head := git(t, user, "rev-parse", "HEAD")
	sc, err := script.Parse("two edits", []byte(twoEdits))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	srv := relaytest.Start(t, relay.Config{Agent: script.New(sc), Workspaces: workspaces(t, home, data)})
	cl := srv.Dial(t)

	ids := map[string]string{"alpha": "aaaaaaaa-1111-4000-8000-000000000001", "beta": "bbbbbbbb-2222-4000-8000-000000000002"}
	asks := map[string]relaytest.Frame{}
	for _, name := range []string{"alpha", "beta"} {
		cl.Send("copilot:send", map[string]any{"conversationId": ids[name], "prompt": name + " edit the notes",
			"workspace": map[string]any{"path": user, "isolation": "worktree"}})
	}
	for len(asks) < 2 {
		f := cl.WaitFor("copilot:user_input_request", nil)
		asks[f.Field("conversationId").(string)] = f
	}
	// Both turns are open, each waiting on its question.
	dirs := map[string]string{}
	for name, id := range ids {
		other, sub := func() (*relaytest.Client, relaytest.Frame) {
			c := srv.Dial(t)
			c.Send("copilot:subscribe", map[string]any{"conversationId": id})
			return c, c.WaitFor("copilot:subscribed", nil)
		}()
		other.Close()
		w := workspaceOf(sub)
		if sub.Field("streaming") != true || w["isolation"] != "worktree" || w["path"] != user || w["base"] != head ||
			w["branch"] != "pilotdesk/"+id[:8] || !strings.HasPrefix(w["dir"].(string), filepath.Join(data, "worktrees")) {
			t.Fatalf("%s: copilot:subscribed %s", name, sub.Raw)
		}
		dirs[name] = w["dir"].(string)
		if got := readFile(t, filepath.Join(dirs[name], "notes.txt")); got != name+" was here\n" {
			t.Errorf("%s's worktree holds %q", name, got)
		}
	}
	if got := readFile(t, filepath.Join(user, "notes.txt")); got != "original\n" {
		t.Errorf("the user's notes.txt holds %q", got)
	}
	if st := git(t, user, "status", "--porcelain"); st != "" {
		t.Errorf("the user's checkout changed: %q", st)
	}
	if git(t, user, "rev-parse", "HEAD") != head || git(t, user, "branch", "--show-current") != "main" {
		t.Error("the user's HEAD or branch moved")
	}
	for id, ask := range asks {
		cl.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": ask.Field("requestId"), "answer": "yes"})
	}
	for range 2 {
		idle := cl.WaitFor("copilot:idle", nil)
		if idle.Field("status") != "completed" {
			t.Fatalf("idle %s", idle.Raw)
		}
	}

	// Delete alpha: its work is committed on its branch, its folder goes.
	branch := "pilotdesk/" + ids["alpha"][:8]
	cl.Send("copilot:delete", map[string]any{"conversationId": ids["alpha"]})
	cl.WaitFor("copilot:deleted", nil)
	if _, err := os.Stat(dirs["alpha"]); !os.IsNotExist(err) {
		t.Errorf("the deleted conversation's worktree is still there: %v", err)
	}
	if msg := git(t, user, "log", "-1", "--format=%s", branch); msg != "alpha edit the notes" {
		t.Errorf("the branch's last commit: %q", msg)
	}
	if got := git(t, user, "show", branch+":notes.txt"); got != "alpha was here" {
		t.Errorf("the branch's notes.txt: %q", got)
	}
	if git(t, user, "rev-parse", branch+"~1") != head {
		t.Error("the branch does not start from the user's HEAD")
	}
	if st := git(t, user, "status", "--porcelain"); st != "" || git(t, user, "rev-parse", "HEAD") != head {
		t.Errorf("the delete changed the user's checkout: %q", st)
	}
	// beta, closed, keeps its worktree as it is.
	cl.Send("copilot:close", map[string]any{"conversationId": ids["beta"]})
	cl.WaitFor("copilot:shutdown", nil)
	if got := readFile(t, filepath.Join(dirs["beta"], "notes.txt")); got != "beta was here\n" {
		t.Errorf("after close beta's worktree holds %q", got)
	}
}

// A relay alone whose conversation's worktree was removed by hand says so,
// and how to go on, where it blamed a shared volume that no other relay
// has: the git commands it gives put the worktree back, and the next
// send runs there again.
func TestWorktreeRemovedByHandSaysHowToGoOn(t *testing.T) {
	checkNoLeaks(t)
	home := t.TempDir()
	// A folder with a space: the git commands given quote it, for a
	// shell to read it as one word.
	user := gitRepo(t, filepath.Join(home, "my project"))
	sc, err := script.Parse("two edits", []byte(twoEdits))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cps, err := checkpoint.New(data)
	if err != nil {
		t.Skip(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(sc), Workspaces: workspaces(t, home, data), Checkpoints: cps})
	cl := srv.Dial(t)
	const id = "dddddddd-4444-4000-8000-000000000004"
	ws := map[string]any{"path": user, "isolation": "worktree"}
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "alpha edit", "workspace": ws})
	ask := cl.WaitFor("copilot:user_input_request", nil)
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": ask.Field("requestId"), "answer": "yes"})
	changes := cl.WaitFor("copilot:changes", nil)
	cl.WaitFor("copilot:idle", nil)
	root := filepath.Join(data, "worktrees", "my project-dddddddd")
	if got := readFile(t, filepath.Join(root, "notes.txt")); got != "alpha was here\n" {
		t.Fatalf("the worktree holds %q", got)
	}
	git(t, user, "-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-am", "kept")
	if err := os.RemoveAll(root); err != nil { // by hand, as rm -rf does
		t.Fatal(err)
	}

	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "alpha again"})
	e := cl.WaitFor("error", nil)
	msg := e.Field("message").(string)
	want := "the conversation's folder " + root + " is gone: its worktree was removed (its branch pilotdesk/dddddddd keeps what was committed on it, and the turns' diffs what they changed). To go on here, put the worktree back (git -C '" + user + "' worktree prune && git -C '" + user + "' worktree add '" + root + "' pilotdesk/dddddddd); or start a new conversation"
	if e.Field("code") != protocol.CodeLimit || msg != want {
		t.Fatalf("error %s\nwant message %q", e.Raw, want)
	}
	// The turn's diff is still there to read, from the repository: what
	// the removal took can be seen, and got back.
	cl.Send("copilot:diff", map[string]any{"conversationId": id, "checkpoint": changes.Field("checkpoint")})
	var diff protocol.DiffReply
	cl.Expect("copilot:diff").Decode(t, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "notes.txt" || !strings.Contains(diff.Files[0].Patch, "+alpha was here") {
		t.Fatalf("the diff of a turn whose worktree is gone: %+v", diff)
	}
	git(t, user, "worktree", "prune")
	git(t, user, "worktree", "add", "--quiet", root, "pilotdesk/dddddddd")
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "alpha again"})
	ask = cl.WaitFor("copilot:user_input_request", nil)
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": ask.Field("requestId"), "answer": "yes"})
	if idle := cl.WaitFor("copilot:idle", nil); idle.Field("status") != "completed" {
		t.Fatalf("idle %s", idle.Raw)
	}
}

// A worktree conversation's workspace says, once a turn left files its
// .gitignore ignores there, that it holds some (ignored: true): a delete
// does not commit them and removes them with the folder, which the
// clients' delete confirmations now say (conversation.DeleteText), where
// only docs/workspaces.md did. The list entry and copilot:subscribed
// carry it; before that turn they do not.
func TestWorktreeSaysItHoldsIgnoredFiles(t *testing.T) {
	checkNoLeaks(t)
	home := t.TempDir()
	user := gitRepo(t, filepath.Join(home, "project"))
	sc, err := script.Parse("build", []byte(`{"turns": [
  {"match": "build", "steps": [
    {"tool": {"name": "bash", "arguments": {"command": "make"}, "run": "printf '*.log\\n' > .gitignore && echo built > build.log"}},
    {"delta": "Built."}
  ]},
  {"steps": [{"tool": {"name": "edit", "arguments": {"path": "notes.txt"}, "write": {"path": "notes.txt", "content": "edited\n"}}}, {"delta": "Edited."}]}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(sc), Workspaces: workspaces(t, home, t.TempDir())})
	cl := srv.Dial(t)
	const id = "dddddddd-4444-4000-8000-000000000004"
	ignored := func() (subscribed, listed any) {
		t.Helper()
		c := srv.Dial(t)
		defer c.Close()
		c.Send("copilot:subscribe", map[string]any{"conversationId": id})
		sub := c.WaitFor("copilot:subscribed", nil)
		c.Send("copilot:list", nil)
		list := c.WaitFor("copilot:conversations", nil)
		for _, e := range list.Field("conversations").([]any) {
			if e := e.(map[string]any); e["conversationId"] == id {
				w, _ := e["workspace"].(map[string]any)
				listed = w["ignored"]
			}
		}
		return workspaceOf(sub)["ignored"], listed
	}
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "edit the notes", "mode": "act",
		"workspace": map[string]any{"path": user, "isolation": "worktree"}})
	cl.WaitFor("copilot:idle", nil)
	if s, l := ignored(); s != nil || l != nil {
		t.Fatalf("before any ignored file: subscribed says %v, the list %v", s, l)
	}
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "build it", "mode": "act"})
	cl.WaitFor("copilot:idle", nil)
	if s, l := ignored(); s != true || l != true {
		t.Fatalf("with build.log ignored in the worktree: subscribed says %v, the list %v", s, l)
	}
}
