package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pilotdesk/pilotdesk"

// importRule is one row of ARCHITECTURE.md's package table: a package,
// the packages of this module it may import ("x/..." a tree, "..."
// anything), whether it may import Fyne, and whether its subpackages are
// its own (the row says "its own subpackages").
type importRule struct {
	pkg     string // "" is main
	may     []string
	fyne    bool
	subpkgs bool
}

// architecture is what the tests read of ARCHITECTURE.md's "Packages and
// the rules between them": the table's rules, the packages its test
// support and tools rows name (which may import anything but cli), and
// the diagram's lines.
type architecture struct {
	rules   []importRule
	support []string
	diagram []string
}

var (
	codeSpan    = regexp.MustCompile("`([^`]+)`")
	packagePath = regexp.MustCompile(`^[a-z][a-z0-9_-]*(/[a-z0-9_.…-]+)*/?$`)
)

// packagesIn returns the inline-code spans of cell that name a package
// path ("x/…" a tree, written "x/..."), in order.
func packagesIn(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		p := strings.TrimSuffix(m[1], "/")
		if !packagePath.MatchString(p) || strings.Contains(p, ".") && !strings.HasSuffix(p, "/…") {
			continue
		}
		out = append(out, strings.Replace(p, "/…", "/...", 1))
	}
	return out
}

// readArchitecture parses ARCHITECTURE.md's package section.
func readArchitecture(t *testing.T) architecture {
	t.Helper()
	doc := readDoc(t, "ARCHITECTURE.md")
	_, section, ok := strings.Cut(doc, "\n## Packages and the rules between them\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no section \"Packages and the rules between them\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var a architecture
	inDiagram := false
	for line := range strings.Lines(section) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			inDiagram = !inDiagram
			continue
		}
		if inDiagram {
			a.diagram = append(a.diagram, line)
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 5 || strings.HasPrefix(line, "|---") || strings.Contains(cells[1], "package") && !strings.Contains(cells[1], "`") {
			continue
		}
		name, job, may := strings.TrimSpace(cells[1]), cells[2], strings.TrimSpace(cells[3])
		if !strings.HasPrefix(name, "`") {
			// The test support and tools rows: what they name may
			// import anything but cli.
			a.support = append(a.support, packagesIn(job)...)
			continue
		}
		if strings.HasPrefix(may, "(") {
			continue // a module of its own
		}
		rule := importRule{fyne: strings.Contains(may, "Fyne"), subpkgs: strings.Contains(may, "its own subpackages")}
		switch {
		case may == "nothing":
		case may == "anything":
			rule.may, rule.fyne = []string{"..."}, true
		default:
			rule.may = packagesIn(may)
		}
		for _, p := range packagesIn(name) {
			r := rule
			if p == "main" {
				p = ""
			}
			r.pkg = p
			if r.subpkgs {
				r.may = append(r.may, p+"/...")
			}
			a.rules = append(a.rules, r)
		}
	}
	if len(a.rules) < 20 || len(a.support) < 10 || len(a.diagram) < 3 {
		t.Fatalf("read %d rules, %d test support packages and %d diagram lines from ARCHITECTURE.md: the section's shape changed", len(a.rules), len(a.support), len(a.diagram))
	}
	return a
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

// ruleFor returns the rule of pkg: its own row, or the row of the package
// whose subpackages are its own; nil for test support and tools (and for a
// package the table does not name).
func (a architecture) ruleFor(pkg string) *importRule {
	if a.isSupport(pkg) {
		return nil // a backend's mock is test support, not the backend
	}
	var best *importRule
	for i, r := range a.rules {
		if (r.pkg == pkg || r.subpkgs && matches(r.pkg+"/...", pkg)) && (best == nil || len(r.pkg) > len(best.pkg)) {
			best = &a.rules[i]
		}
	}
	return best
}

// isSupport reports whether pkg is test support or a tool: named in those
// rows, or below a package they name (a tool's own programs).
func (a architecture) isSupport(pkg string) bool {
	return slices.ContainsFunc(a.support, func(s string) bool { return matches(s+"/...", pkg) })
}

// goList returns every package of the module with its imports.
func goList(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "ci", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkgs[strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")] = fields[1:]
	}
	return pkgs
}

// TestImportRules checks every package's imports (not its tests') against
// ARCHITECTURE.md's table, read from the document itself: a package that
// imports upward, or Fyne outside ui, cli and main, fails make test.
func TestImportRules(t *testing.T) {
	a := readArchitecture(t)
	for pkg, imports := range goList(t) {
		rule := a.ruleFor(pkg)
		for _, imp := range imports {
			if strings.HasPrefix(imp, "fyne.io/") {
				if rule != nil && !rule.fyne {
					t.Errorf("%s imports Fyne (%s): ARCHITECTURE.md's table does not let it", pkg, imp)
				}
				continue
			}
			ours, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if rule == nil {
				if ours == "cli" {
					t.Errorf("%s imports cli: only main may", pkg)
				}
				continue
			}
			if !slices.ContainsFunc(rule.may, func(m string) bool { return matches(m, ours) }) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md's table does not let it (it may import %v)", pkg, ours, rule.may)
			}
		}
	}
}

// TestEveryPackageHasARoom: every package of the module is a row of
// ARCHITECTURE.md's table, a subpackage of a row that says so, or named in
// its test support or tools rows; and every package the document names
// exists.
func TestEveryPackageHasARoom(t *testing.T) {
	a := readArchitecture(t)
	pkgs := goList(t)
	for pkg := range pkgs {
		if pkg == "docs" {
			continue // these tests
		}
		if a.ruleFor(pkg) == nil && !a.isSupport(pkg) {
			t.Errorf("package %q is in no row of ARCHITECTURE.md's package table", pkg)
		}
	}
	for _, r := range a.rules {
		if _, ok := pkgs[r.pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's table has a row for %q, which is no package", r.pkg)
		}
	}
	for _, s := range a.support {
		if _, ok := pkgs[s]; !ok {
			t.Errorf("ARCHITECTURE.md names %q as test support or a tool, which is no package", s)
		}
	}
}

// TestArchitectureDiagram: each arrow of the package diagram is an import
// the table allows (a line that begins with ├► or └► continues cli's).
func TestArchitectureDiagram(t *testing.T) {
	a := readArchitecture(t)
	arrows := 0
	for _, line := range a.diagram {
		trimmed := strings.TrimLeft(line, " │")
		if !strings.Contains(trimmed, "►") {
			continue
		}
		if strings.HasPrefix(trimmed, "├►") || strings.HasPrefix(trimmed, "└►") {
			trimmed = "cli ─►" + trimmed[len("├►"):]
		}
		var groups [][]string
		for part := range strings.SplitSeq(trimmed, "─►") {
			var names []string
			for name := range strings.SplitSeq(part, ",") {
				name = strings.Trim(name, " │─┘└├")
				if base, sub, ok := strings.Cut(name, "(/"); ok {
					names = append(names, base, base+"/"+strings.TrimSuffix(sub, ")"))
				} else if name != "" {
					names = append(names, name)
				}
			}
			groups = append(groups, names)
		}
		for i := 0; i+1 < len(groups); i++ {
			for _, from := range groups[i] {
				rule := a.ruleFor(strings.TrimPrefix(from, "main"))
				if rule == nil {
					t.Errorf("diagram line %q: %s has no row in the table", line, from)
					continue
				}
				for _, to := range groups[i+1] {
					arrows++
					if !slices.ContainsFunc(rule.may, func(m string) bool { return matches(m, to) }) {
						t.Errorf("diagram line %q: the arrow %s ─► %s is an import the table does not allow", line, from, to)
					}
				}
			}
		}
	}
	if arrows < 10 {
		t.Fatalf("read %d arrows from the diagram: its shape changed", arrows)
	}
}

// TestArchitectureNamesExist: every file (`path/file.go`) and every
// package-qualified Go name (`pkg/path.Type.Method`, `pkg.Func`) that
// ARCHITECTURE.md names exists, so that the goroutine table and the prose
// follow the code when it moves.
func TestArchitectureNamesExist(t *testing.T) {
	doc := withoutCodeBlocks(readDoc(t, "ARCHITECTURE.md"))
	qualified := regexp.MustCompile(`^([a-z][a-z0-9]*(?:/[a-z0-9]+)*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?:\(\))?$`)
	decls := map[string]map[string]bool{} // package dir → its names, "T.M" for methods
	declsOf := func(dir string) map[string]bool {
		if d, ok := decls[dir]; ok {
			return d
		}
		d := map[string]bool{}
		decls[dir] = d
		files, _ := filepath.Glob(filepath.Join("..", dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range file.Decls {
				switch decl := decl.(type) {
				case *ast.FuncDecl:
					name := decl.Name.Name
					if decl.Recv != nil && len(decl.Recv.List) > 0 {
						recv := decl.Recv.List[0].Type
						for {
							switch r := recv.(type) {
							case *ast.StarExpr:
								recv = r.X
								continue
							case *ast.IndexExpr:
								recv = r.X
								continue
							case *ast.IndexListExpr:
								recv = r.X
								continue
							case *ast.Ident:
								name = r.Name + "." + name
							}
							break
						}
					}
					d[name] = true
				case *ast.GenDecl:
					for _, spec := range decl.Specs {
						switch spec := spec.(type) {
						case *ast.TypeSpec:
							d[spec.Name.Name] = true
							if st, ok := spec.Type.(*ast.StructType); ok {
								for _, f := range st.Fields.List {
									for _, n := range f.Names {
										d[spec.Name.Name+"."+n.Name] = true
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range spec.Names {
								d[n.Name] = true
							}
						}
					}
				}
			}
		}
		return d
	}
	files, names := 0, 0
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		span := m[1]
		if strings.HasSuffix(span, ".go") && strings.Contains(span, "/") && !strings.ContainsAny(span, " *") {
			files++
			if _, err := os.Stat(filepath.Join("..", span)); err != nil {
				t.Errorf("ARCHITECTURE.md names %s, which is not in the repository", span)
			}
			continue
		}
		q := qualified.FindStringSubmatch(span)
		if q == nil || q[3] == "" && slices.Contains([]string{"json", "md", "sh", "png", "crt", "yml"}, q[2]) {
			continue // not a Go name: a file (`relay.json`)
		}
		dir := q[1]
		if fi, err := os.Stat(filepath.Join("..", dir)); err != nil || !fi.IsDir() {
			continue // not a package of ours (e.g. `time.AfterFunc`, `fyne.Do`)
		}
		name := q[2]
		if q[3] != "" {
			name += "." + q[3]
		}
		names++
		if !declsOf(dir)[name] {
			t.Errorf("ARCHITECTURE.md names %s, which package %s does not declare", span, dir)
		}
	}
	if files < 10 || names < 10 {
		t.Fatalf("checked %d files and %d names of ARCHITECTURE.md: the pattern no longer finds them", files, names)
	}
}

// withoutCodeBlocks is doc without its fenced blocks, whose ``` fences
// would pair with inline code's backticks.
func withoutCodeBlocks(doc string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestEveryLockSaysWhatItGuards: ARCHITECTURE.md says that a lock field
// documents what it guards. Every struct field of type sync.Mutex or
// sync.RWMutex in the module's code (not its tests, not third_party) has a
// comment, above it or on its line, or is named by its type's comment, or
// heads the group of fields it guards (Go's idiom: the lock, then the
// fields up to the next blank line).
func TestEveryLockSaysWhatItGuards(t *testing.T) {
	doc := readDoc(t, "ARCHITECTURE.md")
	if !strings.Contains(doc, "a lock field documents what it guards") {
		t.Fatal("ARCHITECTURE.md no longer says that a lock field documents what it guards: change this test with it")
	}
	locks := 0
	walkGo(t, func(path string, fset *token.FileSet, file *ast.File) {
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		line := func(p token.Pos) int { return fset.Position(p).Line }
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gen.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				typeDoc := gen.Doc.Text() + ts.Doc.Text()
				ast.Inspect(ts.Type, func(n ast.Node) bool {
					st, ok := n.(*ast.StructType)
					if !ok {
						return true
					}
					fields := st.Fields.List
					for i, f := range fields {
						sel, ok := f.Type.(*ast.SelectorExpr)
						if !ok || sel.Sel.Name != "Mutex" && sel.Sel.Name != "RWMutex" {
							continue
						}
						if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "sync" {
							continue
						}
						locks++
						name := "(embedded)"
						if len(f.Names) > 0 {
							name = f.Names[0].Name
						}
						heads := false
						if i+1 < len(fields) {
							next := fields[i+1].Pos()
							if fields[i+1].Doc != nil {
								next = fields[i+1].Doc.Pos()
							}
							heads = line(next) == line(f.End())+1
						}
						if f.Doc == nil && f.Comment == nil && !heads && !strings.Contains(typeDoc, name) {
							t.Errorf("%s:%d: the lock %s says nothing of what it guards", path, line(f.Pos()), name)
						}
					}
					return true
				})
			}
		}
	})
	if locks < 20 {
		t.Fatalf("found %d locks: the walk no longer reaches the code", locks)
	}
}

// TestRoomsStaySmall holds the repository to ARCHITECTURE.md's bounds: no
// Go file over 700 lines, no function outside tests over 120 (generated
// code and third_party/ left out).
func TestRoomsStaySmall(t *testing.T) {
	const maxFileLines, maxFuncLines = 700, 120
	doc := readDoc(t, "ARCHITECTURE.md")
	if !strings.Contains(doc, "holds more than 700 lines, and no function outside tests more than 120") {
		t.Fatal("ARCHITECTURE.md no longer gives the bounds of a file and a function: change this test with it")
	}
	files := 0
	walkGo(t, func(path string, fset *token.FileSet, file *ast.File) {
		if ast.IsGenerated(file) {
			return
		}
		files++
		if n := fset.File(file.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s holds %d lines, over %d: split it by what its parts do", path, n, maxFileLines)
		}
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		ast.Inspect(file, func(n ast.Node) bool {
			var body *ast.BlockStmt
			switch f := n.(type) {
			case *ast.FuncDecl:
				body = f.Body
			case *ast.FuncLit:
				body = f.Body
			}
			if body != nil {
				if lines := fset.Position(body.End()).Line - fset.Position(n.Pos()).Line + 1; lines > maxFuncLines {
					t.Errorf("%s:%d: a function of %d lines, over %d", path, fset.Position(n.Pos()).Line, lines, maxFuncLines)
				}
			}
			return true
		})
	})
	if files < 300 {
		t.Fatalf("read %d Go files: the walk missed the repository", files)
	}
}

// walkGo parses every Go file of the repository (third_party/, node_modules
// and dot folders left out) and hands it to fn with its path from the
// repository's root.
func walkGo(t *testing.T, fn func(path string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "third_party" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(strings.TrimPrefix(path, "../"), fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
