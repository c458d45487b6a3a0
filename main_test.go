package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// internal/fontindex reads the font index beside chroma's lexers package's
// initialisation only if its init runs first: the order comes from the
// import paths and the import graph (its package comment), so a new import
// could change it. GODEBUG=inittrace=1 prints each package's init in the
// order they run; this test binary is the program's own graph.
func TestInitialisedBeforeChroma(t *testing.T) {
	if os.Getenv("PILOTDESK_INITTRACE_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "PILOTDESK_INITTRACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	order := map[string]int{}
	for i, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = i + 1
		}
	}
	index, chroma := order["github.com/pilotdesk/pilotdesk/internal/fontindex"], order["github.com/alecthomas/chroma/v2/lexers"]
	if index == 0 || chroma == 0 {
		t.Fatalf("inittrace lists fontindex at %d and chroma's lexers at %d (0: missing):\n%s", index, chroma, out)
	}
	if index > chroma {
		t.Errorf("internal/fontindex initialises after chroma's lexers (line %d, after %d): the font index no longer overlaps chroma's initialisation", index, chroma)
	}
}
