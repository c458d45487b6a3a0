// Package markdown is how every front end reads an agent's text: the
// markdown dialect it is parsed in (Parse) and the part each kind of code
// token plays when code is highlighted (CodeRole). The window (ui) and the
// terminal (chat) draw both their own way, but from this one reading, so
// they cannot come to disagree on what is a table or what is a keyword.
package markdown

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// dialect parses what agents write: CommonMark with GitHub's tables, task
// lists, strikethrough and bare links. It is configured once here and
// never changed, and a goldmark parser is safe for concurrent use.
var dialect parser.Parser = goldmark.New(goldmark.WithExtensions(
	extension.Table, extension.TaskList, extension.Strikethrough, extension.Linkify,
)).Parser()

// Parse parses md in the agents' dialect. It returns the tree and the
// source its segments point into: md, or md with the link destinations
// that would make goldmark quadratic escaped (defuseLinkDestinations).
func Parse(md string) (ast.Node, []byte) {
	src := []byte(defuseLinkDestinations(md))
	return dialect.Parse(text.NewReader(src)), src
}

// Text is what a text node of the tree of src shows: its source, less the
// backslash of each escape ("\*" shows "*", as CommonMark says), which
// goldmark leaves in the text for its renderer to drop.
func Text(t *ast.Text, src []byte) string {
	return string(util.UnescapePunctuations(t.Segment.Value(src)))
}

// Lines is the source of a leaf block of the tree of src (a code block,
// an HTML block) as it was written: its lines, each with its line break.
func Lines(n ast.Node, src []byte) string {
	var b strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// Role is the part a code token plays, which a front end gives a colour.
type Role uint8

// The roles. RolePlain is text drawn as it is.
const (
	RolePlain Role = iota
	RoleKeyword
	RoleType
	RoleFunction
	RoleBuiltin
	RoleString
	RoleNumber
	RoleComment
	RoleOperator
	RoleInserted
	RoleDeleted
)

// CodeRole is the part token type t plays. Names other than functions,
// classes and builtins (variables, the _ of "for _, n := range") are
// plain: chroma's Name types all share one subcategory with NameClass, so
// asking for that subcategory coloured every identifier as a type, and
// colouring every identifier colours nothing.
func CodeRole(t chroma.TokenType) Role {
	switch {
	case t == chroma.KeywordType || t == chroma.NameClass:
		return RoleType
	case t.InCategory(chroma.Keyword):
		return RoleKeyword
	case t == chroma.NameFunction || t == chroma.NameFunctionMagic:
		return RoleFunction
	case t.InSubCategory(chroma.NameBuiltin) || t == chroma.NameBuiltin:
		return RoleBuiltin
	case t.InSubCategory(chroma.LiteralString) || t == chroma.LiteralString:
		return RoleString
	case t.InSubCategory(chroma.LiteralNumber) || t == chroma.LiteralNumber:
		return RoleNumber
	case t.InCategory(chroma.Comment):
		return RoleComment
	case t.InCategory(chroma.Operator):
		return RoleOperator
	case t == chroma.GenericInserted:
		return RoleInserted
	case t == chroma.GenericDeleted:
		return RoleDeleted
	}
	return RolePlain
}
