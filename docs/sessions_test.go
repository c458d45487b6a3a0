package docs_test

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testbin"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
)

// The recorded terminal sessions of devices.md and cost-and-plan.md are
// made here, from real runs of the binary (serve, token, chat) with the
// scripted agent: the test plays the session again and fails when what
// the commands print no longer matches the page. After a change that is
// meant to change it:
//
//	go test ./docs/ -run TestRecordedSessions -update
var update = flag.Bool("update", false, "rewrite the recorded sessions in docs/ from this run")

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// session is a running command whose standard input the test types into
// and whose output it reads.
type session struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *testsupport.Buffer
	done chan error
}

// sessionEnv is the environment of every command: plain output (no
// colour, no spinner: stdout is a pipe anyway), UTC for the dates, and no
// token from the caller's environment.
func sessionEnv() []string {
	return append(os.Environ(), "NO_COLOR=1", "TZ=UTC", "PILOTDESK_TOKEN=")
}

func start(t *testing.T, name, bin string, args ...string) *session {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = sessionEnv()
	s := &session{t: t, name: name, cmd: cmd, out: &testsupport.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	return s
}

// waitFor waits until the output holds text.
func (s *session) waitFor(text string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.out.String(), text) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s never printed %q; it printed:\n%s", s.name, text, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// typeLine types a line, as a person at the terminal would.
func (s *session) typeLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("typing into %s: %v", s.name, err)
	}
}

// exit waits for the command to end by itself and returns what it printed.
func (s *session) exit() string {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil {
			s.t.Fatalf("%s: %v\n%s", s.name, err, s.out.String())
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("%s did not end; it printed:\n%s", s.name, s.out.String())
	}
	return s.out.String()
}

// serveRelay starts `pilotdesk serve` on a free port and returns its address.
func serveRelay(t *testing.T, bin string, args ...string) (addr string) {
	t.Helper()
	s := start(t, "serve", bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	re := regexp.MustCompile(`relay listening" url=ws://(127\.0\.0\.1:\d+)/ws`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(s.out.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorded finds the block of a page recorded under name: the fenced text
// after the line <!-- recorded: name -->.
func recorded(t *testing.T, page, name string) (start, end int) {
	t.Helper()
	marker := "<!-- recorded: " + name + " -->\n```text\n"
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("the page has no %q", strings.TrimSpace(marker))
	}
	start = i + len(marker)
	n := strings.Index(page[start:], "```\n")
	if n < 0 {
		t.Fatalf("the block %s is not closed", name)
	}
	return start, start + n
}

// dates are the parts of a recording that depend on the day it was made:
// a budget's period ends a month after the spend.
var dates = regexp.MustCompile(`\d{1,2} [A-Z][a-z]{2}( \d{4})?( at)? \d{2}:\d{2}( UTC)?`)

// checkRecorded compares each block of the page with what the run
// printed (dates aside), or rewrites them with -update.
func checkRecorded(t *testing.T, pageName string, blocks map[string]string) {
	t.Helper()
	b, err := os.ReadFile(pageName)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for name, got := range blocks {
		start, end := recorded(t, page, name)
		if *update {
			page = page[:start] + got + page[end:]
			continue
		}
		want := page[start:end]
		if dates.ReplaceAllString(want, "DATE") != dates.ReplaceAllString(got, "DATE") {
			t.Errorf("%s, block %s, is not what the commands print now (go test ./docs/ -run TestRecordedSessions -update rewrites it):\n--- the page\n%s\n--- this run\n%s", pageName, name, want, got)
		}
	}
	if *update {
		if err := os.WriteFile(pageName, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordedSessions replays the sessions of devices.md and
// cost-and-plan.md with the real binary.
func TestRecordedSessions(t *testing.T) {
	bin := testbin.Build(t)
	t.Run("devices", func(t *testing.T) { recordDevices(t, bin) })
	t.Run("cost-and-plan", func(t *testing.T) { recordPlanAndBudget(t, bin) })
}

// recordDevices: serve raises a question; a phone-like second device
// (chat with a controller token of its own) answers it; the laptop's chat
// names the device that answered.
func recordDevices(t *testing.T, bin string) {
	dir := t.TempDir()
	addr := serveRelay(t, bin, "--agent", "script", "--script", filepath.Join("testdata", "devices-script.json"),
		"--data-dir", dir, "--token", "laptop-owner-token", "--input-timeout", "0")
	out, err := exec.Command(bin, "token", "create", "--name", "Pixel", "--role", "controller", "--data-dir", dir).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token, _, _ := strings.Cut(string(out), "\n")
	created := strings.NewReplacer(token, "pdt_…", dir, "DIR").Replace(string(out))
	const conv = "6f1d0c3e-2b4a-4c8e-9a70-5d2e8b1f4c10"
	url := "ws://" + addr + "/ws"

	laptop := start(t, "the laptop's chat", bin, "chat", "--connect", url, "--token", "laptop-owner-token", "--conversation", conv)
	// On a pipe the prompt is printed with the line it reads: wait for
	// the conversation, then type.
	laptop.waitFor("Conversation " + conv)
	laptop.typeLine("deploy the release")
	laptop.waitFor("r/2) Cancel")

	phone := start(t, "the phone's chat", bin, "chat", "--connect", url, "--token", token, "--conversation", conv)
	phone.waitFor("r/2) Cancel")
	phone.typeLine("a")
	phone.waitFor("deploying v2.4.\nusage:")
	phone.typeLine("/quit")
	phoneOut := phone.exit()

	laptop.waitFor("deploying v2.4.\nusage:")
	laptop.typeLine("/quit")
	laptopOut := laptop.exit()

	port := strings.TrimPrefix(addr, "127.0.0.1:")
	clean := func(s string) string { return strings.ReplaceAll(s, "127.0.0.1:"+port, "127.0.0.1:7420") }
	if !strings.Contains(laptopOut, `"Deploy v2.4 to production?" was answered from Pixel (terminal).`) {
		t.Errorf("the laptop does not say who answered:\n%s", laptopOut)
	}
	checkRecorded(t, "devices.md", map[string]string{
		"devices-token":  "$ pilotdesk token create --name Pixel --role controller --data-dir DIR\n" + clean(created),
		"devices-laptop": clean(laptopOut),
		"devices-phone":  clean(phoneOut),
	})
}

// recordPlanAndBudget: a plan turn and its plan list, /run of two of its
// steps in Act, and the next prompt refused because the credit budget is
// spent.
func recordPlanAndBudget(t *testing.T, bin string) {
	const conv = "0b6a2f4d-8c1e-4f7a-b3d5-9e2c7a1f6d58"
	chat := start(t, "chat", bin, "chat", "--agent", "script", "--script", filepath.Join("testdata", "plan-script.json"),
		"--data-dir", t.TempDir(), "--budget-credits", "1", "--conversation", conv)
	chat.waitFor("Conversation " + conv)
	chat.typeLine("/plan")
	chat.typeLine("prepare the release")
	chat.waitFor("/run carries it out in Act")
	chat.typeLine("/run 1,2")
	chat.waitFor("The credit budget is spent")
	chat.typeLine("tag it now")
	chat.waitFor("Not sent: the AI credit budget is used up")
	chat.typeLine("/quit")
	out := chat.exit()
	checkRecorded(t, "cost-and-plan.md", map[string]string{"plan-run-budget": out})
}
