// Package docs_test keeps the documents in docs/ true to the code: every
// message type and error code of protocol/ is in protocol.md, every flag the
// commands print is in cli.md, every key and substitution of the script
// format is in script-agent.md, and nothing in the repository points at a
// document outside it.
package docs_test

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/cli"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// readDoc returns a document of docs/ (the test runs in docs/).
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// backticked reports whether doc has s as inline code: `s`.
func backticked(doc, s string) bool { return strings.Contains(doc, "`"+s+"`") }

// TestProtocolDoc: every client and server message type and every error
// code is named in protocol.md, and every copilot:* type the document
// names outside its Planned section exists.
func TestProtocolDoc(t *testing.T) {
	doc := readDoc(t, "protocol.md")
	for _, list := range []struct {
		what  string
		names []string
	}{
		{"client message type (protocol.ClientTypes)", protocol.ClientTypes()},
		{"server message type (protocol.ServerTypes)", protocol.ServerTypes()},
		{"error code (protocol.ErrorCodes)", protocol.ErrorCodes()},
	} {
		if len(list.names) == 0 {
			t.Errorf("protocol lists no %s", list.what)
		}
		for _, n := range list.names {
			if !backticked(doc, n) {
				t.Errorf("docs/protocol.md does not name the %s `%s`", list.what, n)
			}
		}
	}

	current, _, _ := strings.Cut(doc, "\n## Planned")
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("`(copilot:[a-z_]+)`").FindAllStringSubmatch(current, -1) {
		if !seen[m[1]] && !protocol.KnownClientType(m[1]) && !protocol.KnownServerType(m[1]) {
			t.Errorf("docs/protocol.md describes `%s`, which protocol/ does not have (move it to the Planned section, or add it to protocol/)", m[1])
		}
		seen[m[1]] = true
	}
}

// helpFlags runs a command's -h in-process and returns the flags it lists.
func helpFlags(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	env := cli.Env{
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &out,
		Getenv: func(string) string { return "" },
	}
	if code := cli.Run(context.Background(), args, env); code != 0 {
		t.Fatalf("pilotdesk %s exited %d:\n%s", strings.Join(args, " "), code, out.String())
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9][a-z0-9-]*)\b`).FindAllStringSubmatch(out.String(), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 3 {
		t.Fatalf("pilotdesk %s listed %d flags; is the help's format still flag.PrintDefaults'?\n%s", strings.Join(args, " "), len(flags), out.String())
	}
	return flags
}

// TestCLIDoc: every flag of `pilotdesk serve`, `pilotdesk chat` and the
// window is in cli.md as `--name` (followed by its argument or a closing
// backtick).
func TestCLIDoc(t *testing.T) {
	doc := readDoc(t, "cli.md")
	for _, args := range [][]string{{"serve", "-h"}, {"chat", "-h"}, {"-h"}} {
		flags := helpFlags(t, args...)
		if args[0] == "serve" {
			for _, must := range []string{"listen", "token", "agent", "data-dir"} {
				if !slices.Contains(flags, must) {
					t.Errorf("serve -h does not list --%s: the flag parsing of this test is off", must)
				}
			}
		}
		for _, f := range flags {
			if !regexp.MustCompile("`--" + regexp.QuoteMeta(f) + "[` ]").MatchString(doc) {
				t.Errorf("docs/cli.md does not document --%s (pilotdesk %s)", f, strings.Join(args, " "))
			}
		}
	}
}

// goStrings returns the string literals among exprs.
func goStrings(t *testing.T, exprs []ast.Expr) []string {
	t.Helper()
	var out []string
	for _, e := range exprs {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// scriptFormat reads session/script's sources: the step keys (stepKeys),
// the keys each object allows (the arguments of members and checkKeys after
// the object's description) and the substitutions (string literals of
// play.go of the form {{name}}).
func scriptFormat(t *testing.T) (stepKeys, fieldKeys, substitutions []string) {
	t.Helper()
	fset := token.NewFileSet()
	parse := func(name string) *ast.File {
		f, err := parser.ParseFile(fset, filepath.Join("..", "session", "script", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ast.Inspect(parse("parse.go"), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if id.Name == "stepKeys" && i < len(n.Values) {
					if lit, ok := n.Values[i].(*ast.CompositeLit); ok {
						stepKeys = goStrings(t, lit.Elts)
					}
				}
			}
		case *ast.CallExpr:
			if fn, ok := n.Fun.(*ast.Ident); ok && (fn.Name == "members" || fn.Name == "checkKeys") && len(n.Args) > 2 {
				fieldKeys = append(fieldKeys, goStrings(t, n.Args[2:])...)
			}
		}
		return true
	})
	placeholder := regexp.MustCompile(`^\{\{[a-z]+\}\}$`)
	ast.Inspect(parse("play.go"), func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && placeholder.MatchString(s) {
				substitutions = append(substitutions, s)
			}
		}
		return true
	})
	if !slices.Contains(stepKeys, "delta") || !slices.Contains(fieldKeys, "steps") || !slices.Contains(substitutions, "{{prompt}}") {
		t.Fatalf("could not read the script format from session/script (step keys %q, fields %q, substitutions %q): update this test", stepKeys, fieldKeys, substitutions)
	}
	return stepKeys, fieldKeys, substitutions
}

// TestScriptAgentDoc: every step key, field and substitution of the script
// format is in script-agent.md, and every JSON example there is a script
// the parser accepts.
func TestScriptAgentDoc(t *testing.T) {
	doc := readDoc(t, "script-agent.md")
	steps, fields, subs := scriptFormat(t)
	for _, k := range steps {
		if !backticked(doc, k) {
			t.Errorf("docs/script-agent.md does not describe the step `%s`", k)
		}
	}
	for _, k := range fields {
		// Fields appear alone (`steps`) or in an object's outline
		// (`{name, arguments?, result?}`).
		if !backticked(doc, k) && !regexp.MustCompile("`\\{[^`]*\\b"+regexp.QuoteMeta(k)+"\\b[^`]*\\}`").MatchString(doc) {
			t.Errorf("docs/script-agent.md does not name the key `%s`", k)
		}
	}
	for _, s := range subs {
		if !backticked(doc, s) {
			t.Errorf("docs/script-agent.md does not describe the substitution `%s`", s)
		}
	}

	examples := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(examples) == 0 {
		t.Error("docs/script-agent.md has no JSON example")
	}
	for i, m := range examples {
		if _, err := script.Parse("docs/script-agent.md example "+strconv.Itoa(i+1), []byte(m[1])); err != nil {
			t.Errorf("an example of docs/script-agent.md is not a valid script: %v", err)
		}
	}
}

// outside are references to documents that live next to the repository,
// not in it; a clone has none of them. The docs/ pages are their
// replacements.
var outside = []struct {
	re  *regexp.Regexp
	fix string
}{
	{regexp.MustCompile(`\.\./shared|shared/(spec|research|seeds)`), "a path outside the repository"},
	{regexp.MustCompile(`PROTOCOL\.md`), "use docs/protocol.md and its section"},
	{regexp.MustCompile(`SCRIPT-AGENT\.md`), "use docs/script-agent.md"},
	{regexp.MustCompile(`\bCLI\.md`), "use docs/cli.md"},
	{regexp.MustCompile(`\bresearch/`), "state the fact, or point at a docs/ page (docs/copilot-cli.md, docs/reliability.md)"},
	{regexp.MustCompile(`(?i)\bseeds?[ _]?0\d\d`), "point at the docs/ page and section that says it"},
}

// TestNoReferencesOutsideTheRepository scans every tracked text file for a
// reference to a document outside the repository.
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Skipf("not a git checkout (git ls-files: %s)", bytes.TrimSpace(exit.Stderr))
		}
		t.Skipf("git ls-files: %v", err)
	}
	self := filepath.Join("docs", "docs_test.go") // it names the patterns
	scanned := 0
	for name := range strings.SplitSeq(string(out), "\x00") {
		if name == "" || filepath.FromSlash(name) == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted or moved in the working tree
		}
		if err != nil {
			t.Error(err)
			continue
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			continue // binary
		}
		scanned++
		for i, line := range strings.Split(string(data), "\n") {
			var found, fixes []string
			for _, o := range outside {
				if m := o.re.FindString(line); m != "" {
					found, fixes = append(found, strconv.Quote(m)), append(fixes, o.fix)
				}
			}
			if len(found) > 0 {
				t.Errorf("%s:%d: %s: a document outside the repository (%s): %s",
					name, i+1, strings.Join(found, ", "), strings.Join(fixes, "; "), strings.TrimSpace(line))
			}
		}
	}
	if scanned == 0 {
		t.Error("no tracked text file was scanned")
	}
}
