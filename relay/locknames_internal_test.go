package relay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOwnershipLockOrder checks, from the source, what the package's doc
// and docs/ARCHITECTURE.md say of a conversation's ownership lock: it is
// never taken under a conversation's mu (by a function named …Locked) or
// by a function that already holds it (…OwnLocked). A function takes it if
// it locks own.mu itself or calls one that does, on its own goroutine:
// what it starts on another (a go statement, a closure it hands over) is
// not counted. Calls are matched by name, whatever the receiver, so a
// name shared by two methods counts for both.
func TestOwnershipLockOrder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	bodies := map[string][]*ast.BlockStmt{} // by function name
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				bodies[fn.Name.Name] = append(bodies[fn.Name.Name], fn.Body)
			}
		}
	}

	// calls lists what body locks and calls on its own goroutine.
	calls := func(body *ast.BlockStmt) (locksOwn bool, called []string) {
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit, *ast.GoStmt:
				return false
			case *ast.CallExpr:
				switch fun := n.Fun.(type) {
				case *ast.Ident:
					called = append(called, fun.Name)
				case *ast.SelectorExpr:
					called = append(called, fun.Sel.Name)
					if fun.Sel.Name == "Lock" && strings.HasSuffix(exprString(fun.X), "own.mu") {
						locksOwn = true
					}
				}
			}
			return true
		})
		return locksOwn, called
	}

	// takers: the functions that take the ownership lock, directly or
	// through a call.
	takers := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, bs := range bodies {
			if takers[name] {
				continue
			}
			for _, b := range bs {
				locks, called := calls(b)
				if locks || slices.ContainsFunc(called, func(c string) bool { return takers[c] }) {
					takers[name] = true
					changed = true
					break
				}
			}
		}
	}
	for _, want := range []string{"refollow", "applyStored", "takeOverAs", "join"} {
		if !takers[want] {
			t.Errorf("%s is not found to take the ownership lock: the check reads the source wrongly", want)
		}
	}

	for name, bs := range bodies {
		if !strings.HasSuffix(name, "Locked") {
			continue
		}
		for _, b := range bs {
			locks, called := calls(b)
			if locks {
				t.Errorf("%s locks own.mu: it is called holding a lock the ownership lock may not be taken under, or holding it already", name)
			}
			for _, c := range called {
				if takers[c] {
					t.Errorf("%s calls %s, which takes the ownership lock: it is called holding a lock the ownership lock may not be taken under, or holding it already", name, c)
				}
			}
		}
	}
}

// exprString is x as written, for the selectors the test looks for.
func exprString(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return ""
}
