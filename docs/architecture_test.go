package docs_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/pilotdesk/pilotdesk"

// importRules is ARCHITECTURE.md's table of package rules: for each package
// (or package tree, ending in "/..."), the packages of this module it may
// import (again "/..." for a tree), and whether it may import Fyne. A
// package the table does not name is a tool or a test suite, which may
// import anything but cli. Dependencies point down: nothing imports a
// package above it.
var importRules = []struct {
	pkg  string
	may  []string
	fyne bool
}{
	{"protocol", nil, false},
	{"session", nil, false},
	{"settings", nil, false},
	{"assets", nil, false},
	{"internal/queue", nil, false},
	{"internal/qr", nil, false},
	{"internal/agentproc", nil, false},
	{"internal/filelock", nil, false},
	{"internal/ownerfile", nil, false},
	{"internal/atomicfile", []string{"internal/ownerfile"}, false},
	{"internal/glpreload", nil, false},
	{"internal/markdown", nil, false},
	{"internal/testsupport", []string{"session"}, false},
	{"session/script", []string{"session", "assets"}, false},
	{"session/backend", nil, false},
	{"session/copilot/...", []string{"session", "session/backend", "session/copilot/...", "internal/queue", "internal/agentproc", "internal/mockhttp"}, false},
	{"session/acp/...", []string{"session", "session/backend", "session/acp/...", "internal/queue", "internal/agentproc", "internal/atomicfile"}, false},
	{"relay/history", nil, false},
	{"relay/history/sqlite", []string{"relay/history", "internal/filelock", "internal/ownerfile", "internal/atomicfile"}, false},
	{"relay/history/jetstream", []string{"relay/history", "internal/filelock"}, false},
	{"relay/checkpoint", nil, false},
	{"web", nil, false},
	{"relay/workspace", nil, false},
	{"relay", []string{"protocol", "session", "relay/history", "relay/checkpoint", "relay/workspace", "internal/queue", "web"}, false},
	{"client", []string{"protocol"}, false},
	{"conversation", []string{"protocol", "client"}, false},
	{"ui/store", []string{"protocol", "client", "conversation"}, false},
	{"chat", []string{"protocol", "client", "conversation", "internal/atomicfile", "internal/markdown"}, false},
	{"ui", []string{"protocol", "client", "conversation", "ui/store", "settings", "assets", "web", "internal/..."}, true},
	{"cli", []string{"..."}, true},
	{"", []string{"cli", "internal/..."}, true}, // main
}

func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return pkg == pattern
}

// TestImportRules checks every package's imports (not its tests') against
// importRules.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "ci", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		rule := -1
		for i, r := range importRules {
			if matches(r.pkg, pkg) && (rule < 0 || len(r.pkg) > len(importRules[rule].pkg)) {
				rule = i
			}
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "fyne.io/") {
				if rule >= 0 && !importRules[rule].fyne {
					t.Errorf("%s imports Fyne (%s): only ui, cli and main may", pkg, imp)
				}
				continue
			}
			ours, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if rule < 0 {
				if ours == "cli" {
					t.Errorf("%s imports cli: only main may", pkg)
				}
				continue
			}
			allowed := false
			for _, m := range importRules[rule].may {
				allowed = allowed || matches(m, ours)
			}
			if !allowed {
				t.Errorf("%s imports %s, which its rule (%q may import %v) does not allow", pkg, ours, importRules[rule].pkg, importRules[rule].may)
			}
		}
	}
}
