package agentproc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
)

// TestRelayDeathEndsTheAgent: an agent whose relay died without stopping
// it (SIGKILL here; a window whose X display went away, a crash) gets
// SIGTERM and ends, though it ignores the end of its stdin, as Claude Code
// does. Forked from a goroutine that is not the agents' thread and has
// ended since: the signal follows the process, not that thread.
func TestRelayDeathEndsTheAgent(t *testing.T) {
	relay := exec.Command(os.Args[0])
	relay.Env = append(os.Environ(), envHelper+"=relay")
	out, err := relay.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	defer relay.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the relay said no agent pid: %v", err)
	}
	agent, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the relay said %q", line)
	}
	if err := syscall.Kill(agent, 0); err != nil {
		t.Fatalf("the agent %d does not run: %v", agent, err)
	}
	if err := relay.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = relay.Wait()
	testsupport.WaitGone(t, agent, 10*time.Second)
}

func init() { platformHelpers["relay"] = relayHelper }

// relayHelper plays a relay: it starts a "sleep" agent from a goroutine
// that ends at once, says the agent's pid, and waits to be killed.
func relayHelper() int {
	started := make(chan *Process)
	go func() {
		p, err := Start(Config{Path: os.Args[0], Env: []string{envHelper + "=sleep"}, Grace: time.Second})
		if err != nil {
			panic(err)
		}
		started <- p
	}()
	p := <-started
	os.Stdout.WriteString(strconv.Itoa(p.Pid()) + "\n")
	time.Sleep(time.Hour)
	return 0
}
