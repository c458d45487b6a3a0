package relay_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// changesScript's Act turn writes a file, changes one by a shell command
// and deletes one; "wait" sleeps so that a restore can come while it runs.
const changesScript = `{"turns": [
  {"match": "change", "steps": [
    {"tool": {"name": "edit", "arguments": {"path": "new.txt"}, "write": {"path": "new.txt", "content": "one\ntwo\n"}}},
    {"tool": {"name": "bash", "arguments": {"command": "sed"}, "run": "printf 'a\\nB\\nc\\n' > shell.txt"}},
    {"tool": {"name": "bash", "arguments": {"command": "rm gone.txt"}, "remove": "gone.txt"}},
    {"delta": "Changed."}
  ]},
  {"match": "wait", "steps": [{"sleep": "30s"}]},
  {"match": "big", "steps": [
    {"tool": {"name": "bash", "arguments": {"command": "head"}, "run": "head -c 10485761 /dev/zero > big.bin"}},
    {"delta": "Made it."}
  ]},
  {"match": "switch", "steps": [
    {"ask": {"question": "Act now?"}},
    {"tool": {"name": "edit", "arguments": {"path": "switched.txt"}, "write": {"path": "switched.txt", "content": "made in Act\n"}}},
    {"delta": "Switched."}
  ]},
  {"steps": [{"delta": "Nothing to change."}]}
]}`

type checkpointRelay struct {
	srv *relaytest.Server
	dir string
}

func startCheckpointRelay(t *testing.T, dir, data string, store *sqlite.Store) checkpointRelay {
	t.Helper()
	sc, err := script.Parse("changes.json", []byte(changesScript))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(data)
	if err != nil {
		t.Skip(err)
	}
	cfg := relay.Config{Agent: script.New(sc), Checkpoints: cps, WorkDir: dir, Token: "owner-token"}
	if store != nil {
		cfg.Store = store
	}
	return checkpointRelay{srv: relaytest.Start(t, cfg), dir: dir}
}

func checkpointFolder(t *testing.T) string {
	dir := t.TempDir()
	for name, content := range map[string]string{"shell.txt": "a\nb\nc\n", "gone.txt": "bye\n", "same.txt": "same\n", ".gitignore": "*.log\n", "x.log": "ignored\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func changesOf(t *testing.T, f relaytest.Frame) protocol.Changes {
	t.Helper()
	var ch protocol.Changes
	f.Decode(t, &ch)
	return ch
}

func fileSummary(files []protocol.ChangedFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path+" "+f.Status+" +"+itoa(f.Additions)+" -"+itoa(f.Deletions))
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// An Act turn that writes a file, changes one by a shell command and
// deletes one reports all three with their counts, as its last event
// before copilot:idle; a Plan turn reports nothing; copilot:diff answers
// the turn's patches; a restore puts the folder back and its undo puts
// the turn's changes back again.
func TestTurnChangesDiffRestore(t *testing.T) {
	checkNoLeaks(t)
	dir := checkpointFolder(t)
	r := startCheckpointRelay(t, dir, t.TempDir(), nil)
	cl := r.srv.Dial(t)

	cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "change it", "mode": "act"})
	um := cl.WaitFor("copilot:user_message", nil)
	idle, frames := cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "completed" {
		t.Fatalf("idle %s", idle.Raw)
	}
	last := frames[len(frames)-1]
	if last.Type != protocol.TypeChanges {
		t.Fatalf("the event before idle is %s, want copilot:changes: %s", last.Type, framesString(frames))
	}
	ch := changesOf(t, last)
	want := []string{"gone.txt deleted +0 -1", "new.txt added +2 -0", "shell.txt modified +1 -1"}
	if got := fileSummary(ch.Files); !slices.Equal(got, want) || ch.MessageID != um.Field("messageId") || ch.Checkpoint == "" || ch.After == "" || ch.Truncated {
		t.Fatalf("changes %s, want files %v", last.Raw, want)
	}

	// Plan: the tools are denied, nothing changes, nothing is reported.
	cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "change it again", "mode": "plan"})
	_, frames = cl.WaitForCollect("copilot:idle", nil)
	for _, f := range frames {
		if f.Type == protocol.TypeChanges {
			t.Fatalf("a Plan turn sent %s", f.Raw)
		}
	}

	cl.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	var diff protocol.DiffReply
	cl.Expect("copilot:diff").Decode(t, &diff)
	if len(diff.Files) != 3 || !strings.Contains(diff.Files[2].Patch, "-b\n+B") || !strings.Contains(diff.Files[1].Patch, "+two") {
		t.Fatalf("diff %+v", diff)
	}
	cl.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint, "path": "new.txt"})
	cl.Expect("copilot:diff").Decode(t, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "new.txt" {
		t.Fatalf("diff of one file %+v", diff)
	}
	cl.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": strings.Repeat("0", 40)})
	if e := cl.Expect("error"); e.Field("code") != protocol.CodeInvalidField {
		t.Fatalf("diff of an unknown checkpoint: %s", e.Raw)
	}

	cl.Send("copilot:restore", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	var restored protocol.Restored
	cl.Expect("copilot:restored").Decode(t, &restored)
	if restored.Undo == "" || restored.Checkpoint != ch.Checkpoint || len(restored.Files) != 3 {
		t.Fatalf("restored %+v", restored)
	}
	for name, content := range map[string]string{"shell.txt": "a\nb\nc\n", "gone.txt": "bye\n", "x.log": "ignored\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != content {
			t.Fatalf("after the restore %s is %q, want %q", name, b, content)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("new.txt is still there after the restore")
	}
	// The undo checkpoint is diffable: its diff is what the restore did,
	// whose reverse an undo brings back.
	cl.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": restored.Undo})
	cl.Expect("copilot:diff").Decode(t, &diff)
	var undone []string
	for _, f := range diff.Files {
		undone = append(undone, f.Path+" "+f.Status)
	}
	if want := []string{"gone.txt added", "new.txt deleted", "shell.txt modified"}; diff.Checkpoint != restored.Undo || !slices.Equal(undone, want) ||
		!strings.Contains(diff.Files[1].Patch, "-two") || !strings.Contains(diff.Files[2].Patch, "-B\n+b") {
		t.Fatalf("diff of the undo checkpoint %+v, want the restore's changes %v", diff, want)
	}
	cl.Send("copilot:restore", map[string]any{"conversationId": "cp", "checkpoint": restored.Undo})
	cl.Expect("copilot:restored")
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("after the undo new.txt is %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		t.Fatal("the folder got a .git")
	}

	// Another conversation's checkpoint is not this one's.
	cl.Send("copilot:restore", map[string]any{"conversationId": "other", "checkpoint": ch.Checkpoint})
	if e := cl.WaitFor("error", nil); e.Field("code") != protocol.CodeInvalidField {
		t.Fatalf("restore of a foreign checkpoint: %s", e.Raw)
	}
}

// A file over 10 MiB is marked large in the turn's change set, where it
// was binary only, so that the restore's confirmation can say the restore
// leaves it as it is (it did say "removed"); the restore then lists it
// skipped, and the file is still there.
func TestLargeFileMarkedInChangeSet(t *testing.T) {
	dir := checkpointFolder(t)
	r := startCheckpointRelay(t, dir, t.TempDir(), nil)
	cl := r.srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "big", "prompt": "big file", "mode": "act"})
	_, frames := cl.WaitForCollect("copilot:idle", nil)
	last := frames[len(frames)-1]
	if last.Type != protocol.TypeChanges {
		t.Fatalf("the event before idle is %s: %s", last.Type, framesString(frames))
	}
	ch := changesOf(t, last)
	if len(ch.Files) != 1 || ch.Files[0].Path != "big.bin" || ch.Files[0].Status != protocol.FileAdded || !ch.Files[0].Large || !ch.Files[0].Binary {
		t.Fatalf("changes %s, want big.bin added, large", last.Raw)
	}
	cl.Send("copilot:restore", map[string]any{"conversationId": "big", "checkpoint": ch.Checkpoint})
	var restored protocol.Restored
	cl.Expect("copilot:restored").Decode(t, &restored)
	if len(restored.Files) != 1 || restored.Files[0].Status != protocol.FileSkipped || !restored.Files[0].Large {
		t.Fatalf("restored %+v", restored)
	}
	if st, err := os.Stat(filepath.Join(dir, "big.bin")); err != nil || st.Size() != checkpoint.MaxFile+1 {
		t.Fatalf("after the restore big.bin is %v, %v", st, err)
	}
}

// A restore while a turn runs is refused (conversation_busy), and a
// viewer may diff but not restore.
func TestRestoreRefusals(t *testing.T) {
	checkNoLeaks(t)
	dir := checkpointFolder(t)
	r := startCheckpointRelay(t, dir, t.TempDir(), nil)
	cl := r.srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "change it"})
	ch := changesOf(t, cl.WaitFor("copilot:changes", nil))
	cl.WaitFor("copilot:idle", nil)

	token, _, err := r.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "phone", Role: protocol.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	viewer := relaytest.Dial(t, r.srv.URL, token)
	viewer.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	viewer.Expect("copilot:diff")
	viewer.Send("copilot:restore", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	if e := viewer.Expect("error"); e.Field("code") != protocol.CodeForbidden {
		t.Fatalf("a viewer's restore: %s", e.Raw)
	}

	cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "wait"})
	cl.WaitFor("copilot:user_message", nil)
	cl.Send("copilot:restore", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	if e := cl.WaitFor("error", nil); e.Field("code") != protocol.CodeConversationBusy {
		t.Fatalf("a restore while streaming: %s", e.Raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatal("a refused restore changed the folder")
	}
	cl.Send("copilot:abort", map[string]any{"conversationId": "cp"})
	cl.WaitFor("copilot:idle", nil)
}

// After a restart on the same SQLite history, the replay has
// copilot:changes and copilot:diff still answers; deleting the
// conversation deletes its refs.
func TestChangesAfterRestart(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	for name, content := range map[string]string{"shell.txt": "a\nb\nc\n", "gone.txt": "bye\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	data, cpData := t.TempDir(), t.TempDir()
	open := func() *sqlite.Store {
		store, err := sqlite.Open(context.Background(), data, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return store
	}

	store := open()
	r := startCheckpointRelay(t, dir, cpData, store)
	cl := r.srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "change it"})
	ch := changesOf(t, cl.WaitFor("copilot:changes", nil))
	cl.WaitFor("copilot:idle", nil)
	r.srv.Close()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store = open()
	defer store.Close()
	r = startCheckpointRelay(t, dir, cpData, store)
	cl = r.srv.Dial(t)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "cp", "sinceSeq": 0})
	_, replay := cl.WaitForCollect("copilot:subscribed", nil)
	found := false
	for _, f := range replay {
		if f.Type == protocol.TypeChanges {
			found = changesOf(t, f).Checkpoint == ch.Checkpoint
		}
	}
	if !found {
		t.Fatalf("the replay has no copilot:changes: %s", framesString(replay))
	}
	cl.Send("copilot:diff", map[string]any{"conversationId": "cp", "checkpoint": ch.Checkpoint})
	var diff protocol.DiffReply
	cl.Expect("copilot:diff").Decode(t, &diff)
	if len(diff.Files) != 3 {
		t.Fatalf("diff after a restart: %+v", diff)
	}
	if refs := git("for-each-ref", "refs/pilotdesk/cp/"); refs == "" {
		t.Fatal("no refs under refs/pilotdesk/cp/")
	}
	cl.Send("copilot:delete", map[string]any{"conversationId": "cp"})
	cl.WaitFor("copilot:deleted", nil)
	r.srv.Close()
	if refs := git("for-each-ref", "refs/pilotdesk/"); refs != "" {
		t.Fatalf("refs left after the delete: %s", refs)
	}
	if st := git("status", "--porcelain"); !strings.Contains(st, "new.txt") {
		t.Fatalf("git status: %q", st)
	}
}

// A snapshot that fails (here its data dir cannot be made; a full disk
// fails alike) lets the turn run, and says once that its changes are not
// recorded.
func TestSnapshotFailureSaidOnce(t *testing.T) {
	checkNoLeaks(t)
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := startCheckpointRelay(t, checkpointFolder(t), filepath.Join(blocked, "data"), nil)
	cl := r.srv.Dial(t)
	for i := range 2 {
		cl.Send("copilot:send", map[string]any{"conversationId": "cp", "prompt": "change it"})
		idle, frames := cl.WaitForCollect("copilot:idle", nil)
		if idle.Field("status") != "completed" {
			t.Fatalf("turn %d: %s", i, idle.Raw)
		}
		errors := 0
		for _, f := range frames {
			switch f.Type {
			case protocol.TypeChanges:
				t.Fatalf("changes without a snapshot: %s", f.Raw)
			case protocol.TypeAgentError:
				if !strings.Contains(f.Field("message").(string), "not recorded") {
					t.Fatalf("error %s", f.Raw)
				}
				errors++
			}
		}
		if want := map[int]int{0: 1, 1: 0}[i]; errors != want {
			t.Fatalf("turn %d said %d times that its changes are not recorded, want %d", i, errors, want)
		}
		// The next turn's shell step finds shell.txt changed already.
	}
}

// A relay that starts without a conversation whose snapshots it finds
// (deleted, or dropped by --history-max-age, while it was not running)
// deletes their refs.
func TestStartPrunesCheckpointsOfGoneConversations(t *testing.T) {
	checkNoLeaks(t)
	dir, cpData := checkpointFolder(t), t.TempDir()
	r := startCheckpointRelay(t, dir, cpData, nil)
	cl := r.srv.Dial(t)
	cl.Send("copilot:send", map[string]any{"conversationId": "gone", "prompt": "change it"})
	cl.WaitFor("copilot:idle", nil)
	r.srv.Close()
	refs := func() string {
		repos, _ := filepath.Glob(filepath.Join(cpData, "checkpoints", "repos", "*.git"))
		if len(repos) == 0 {
			return ""
		}
		out, err := exec.Command("git", "--git-dir="+repos[0], "for-each-ref", "refs/pilotdesk/").CombinedOutput()
		if _, gone := os.Stat(repos[0]); gone != nil {
			return "" // pruned whole between the glob and git's look
		}
		if err != nil {
			t.Fatalf("git for-each-ref: %v: %s", err, out)
		}
		return string(out)
	}
	if refs() == "" {
		t.Fatal("no refs after the turn")
	}
	r = startCheckpointRelay(t, dir, cpData, nil) // a new memory store: the conversation is gone
	deadline := time.Now().Add(relaytest.Timeout)
	for refs() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("refs of a gone conversation left: %s", refs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.srv.Close()
}

// A turn started in Plan and switched to Act midway (the question gives
// the test its moment) reports what it changed from the turn's start; a
// Plan turn that stays in Plan reports nothing (TestTurnChangesDiffRestore).
func TestPlanTurnSwitchedToActRecorded(t *testing.T) {
	checkNoLeaks(t)
	dir := checkpointFolder(t)
	r := startCheckpointRelay(t, dir, t.TempDir(), nil)
	cl := r.srv.Dial(t)

	cl.Send("copilot:send", map[string]any{"conversationId": "sw", "prompt": "switch", "mode": "plan"})
	um := cl.WaitFor("copilot:user_message", nil)
	req := cl.WaitFor("copilot:user_input_request", nil)
	cl.Send("copilot:set_mode", map[string]any{"conversationId": "sw", "mode": "act"})
	cl.WaitFor("copilot:mode_changed", nil)
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "sw", "requestId": req.Field("requestId"), "answer": "yes"})
	idle, frames := cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != "completed" {
		t.Fatalf("idle %s", idle.Raw)
	}
	last := frames[len(frames)-1]
	if last.Type != protocol.TypeChanges {
		t.Fatalf("the event before idle is %s, want copilot:changes: %s", last.Type, framesString(frames))
	}
	ch := changesOf(t, last)
	if got := fileSummary(ch.Files); !slices.Equal(got, []string{"switched.txt added +1 -0"}) || ch.MessageID != um.Field("messageId") {
		t.Fatalf("changes %s", last.Raw)
	}
}

// Deleting a conversation that works in a worktree deletes the refs of its
// snapshots from the repository, as for any folder (docs/checkpoints.md,
// Pruning), although the delete removes the worktree's folder first: the
// refs are the repository's, shared by all its worktrees, and left there
// they would keep every snapshot's objects for good. The worktree's
// private index goes too, also when the relay restarted since the last
// snapshot (it was kept: only a folder located since the start was
// known, and a removed worktree can no longer be asked where it was).
func TestWorktreeDeleteDropsCheckpoints(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "restarted"}[restart], func(t *testing.T) {
			worktreeDeleteDropsCheckpoints(t, restart)
		})
	}
}

func worktreeDeleteDropsCheckpoints(t *testing.T, restart bool) {
	checkNoLeaks(t)
	home := t.TempDir()
	user := gitRepo(t, filepath.Join(home, "project"))
	sc, err := script.Parse("changes.json", []byte(changesScript))
	if err != nil {
		t.Fatal(err)
	}
	data, history := t.TempDir(), t.TempDir()
	start := func() (*relaytest.Server, *sqlite.Store) {
		cps, err := checkpoint.New(data)
		if err != nil {
			t.Skip(err)
		}
		store, err := sqlite.Open(context.Background(), history, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return relaytest.Start(t, relay.Config{Agent: script.New(sc), Checkpoints: cps, Workspaces: workspaces(t, home, data), Store: store}), store
	}
	srv, store := start()
	cl := srv.Dial(t)
	const id = "cccccccc-3333-4000-8000-000000000003"
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "change it",
		"workspace": map[string]any{"path": user, "isolation": "worktree"}})
	cl.WaitFor("copilot:changes", nil)
	cl.WaitFor("copilot:idle", nil)
	if refs := git(t, user, "for-each-ref", "refs/pilotdesk/"+id+"/"); refs == "" {
		t.Fatal("the turn left no refs under refs/pilotdesk/ in the repository")
	}
	if left, _ := filepath.Glob(filepath.Join(data, "checkpoints", "index", "*")); len(left) == 0 {
		t.Fatal("the worktree has no private index to remove")
	}
	if restart {
		srv.Close()
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		srv, store = start()
		cl = srv.Dial(t)
		cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
		cl.WaitFor("copilot:subscribed", nil)
	}
	defer store.Close()
	cl.Send("copilot:delete", map[string]any{"conversationId": id})
	cl.WaitFor("copilot:deleted", nil)
	srv.Close() // the delete's work is done
	if refs := git(t, user, "for-each-ref", "refs/pilotdesk/"); refs != "" {
		t.Fatalf("refs left after the delete of a worktree's conversation:\n%s", refs)
	}
	// Nor is the worktree's private index kept, nor its folder listed.
	if left, _ := filepath.Glob(filepath.Join(data, "checkpoints", "index", "*")); len(left) != 0 {
		t.Errorf("the deleted worktree's index is still in the data dir: %v", left)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "checkpoints", "folders")); strings.Contains(string(b), filepath.Join(data, "worktrees")) {
		t.Errorf("the folders file still lists the deleted worktree:\n%s", b)
	}
	if got := git(t, user, "show", "pilotdesk/cccccccc:new.txt"); got != "one\ntwo" {
		t.Errorf("the branch's new.txt: %q", got)
	}
}
