package markdown

import (
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// TestDialect: the extensions every front end relies on are on: a table,
// a task box, strikethrough and a bare link each parse as their node.
func TestDialect(t *testing.T) {
	src := "| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n\n~~gone~~ and https://example.com/x\n"
	found := map[ast.NodeKind]bool{}
	doc, _ := Parse(src)
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			found[n.Kind()] = true
		}
		return ast.WalkContinue, nil
	})
	for _, k := range []ast.NodeKind{east.KindTable, east.KindTaskCheckBox, east.KindStrikethrough, ast.KindAutoLink} {
		if !found[k] {
			t.Errorf("no %s node in the parse", k)
		}
	}
}

// TestCodeRole: keywords, types, functions, builtins, literals, comments,
// operators and diff lines each have their part; other names are plain.
func TestCodeRole(t *testing.T) {
	for tt, want := range map[chroma.TokenType]Role{
		chroma.Keyword:              RoleKeyword,
		chroma.KeywordDeclaration:   RoleKeyword,
		chroma.KeywordType:          RoleType,
		chroma.NameClass:            RoleType,
		chroma.NameFunction:         RoleFunction,
		chroma.NameBuiltin:          RoleBuiltin,
		chroma.NameBuiltinPseudo:    RoleBuiltin,
		chroma.LiteralStringDouble:  RoleString,
		chroma.LiteralNumberInteger: RoleNumber,
		chroma.CommentSingle:        RoleComment,
		chroma.Operator:             RoleOperator,
		chroma.GenericInserted:      RoleInserted,
		chroma.GenericDeleted:       RoleDeleted,
		chroma.Name:                 RolePlain,
		chroma.NameOther:            RolePlain,
		chroma.NameVariable:         RolePlain,
		chroma.Punctuation:          RolePlain,
		chroma.Text:                 RolePlain,
	} {
		if got := CodeRole(tt); got != want {
			t.Errorf("CodeRole(%s) = %d, want %d", tt, got, want)
		}
	}
}

// TestLines: a code block's and an HTML block's source comes back as it
// was written, line breaks and indentation kept, the fences left out.
func TestLines(t *testing.T) {
	doc, src := Parse("```go\nif x {\n\treturn\n}\n```\n\n<div>\n  *raw*\n</div>\n")
	var got []string
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n.(type) {
		case *ast.FencedCodeBlock, *ast.HTMLBlock:
			if entering {
				got = append(got, Lines(n, src))
			}
		}
		return ast.WalkContinue, nil
	})
	want := []string{"if x {\n\treturn\n}\n", "<div>\n  *raw*\n</div>\n"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
}
