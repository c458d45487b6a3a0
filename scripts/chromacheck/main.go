// Command chromacheck prints what a program sees of chroma's lexers: every
// name and alias and the lexer it gets, the lexers some file names match,
// the lexers the analysers pick for some texts, and the tokens of samples
// in the languages whose lexers are written in Go. scripts/chroma-check.sh
// runs it on the released chroma and on third_party/chroma, pilotdesk's
// copy that loads its lexers on first use, and compares the two.
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

func main() {
	names := lexers.Names(true)
	fmt.Println("names", len(names))
	for _, n := range names {
		c := lexers.Get(n).Config()
		fmt.Println("get", n, "->", c.Name, c.Aliases, c.Filenames, c.MimeTypes, c.Priority)
	}
	for _, f := range []string{"a.go", "a.py", "a.md", "a.php", "a.inc", "a.html", "x.zone", "a.sql", "a.yaml", "a.ts", "Makefile", "a.sh", "a.rs", "a.c", "a.tmpl", "a.zed", "a.erb", "a.el", "a.lisp", "a.unknown"} {
		fmt.Println("match", f, name(lexers.Match(f)))
	}
	for _, text := range []string{
		"@ IN SOA ns1.example.com. admin.example.com. (\n",
		"SELECT `a`, `b` FROM `t`",
		"definition user {}\ndefinition doc { relation viewer: user\n permission view = viewer }",
		"#!/usr/bin/env python\nimport os\n",
		"#!/bin/sh\necho hi\n",
		"<?php echo 'hi'; ?>",
	} {
		fmt.Printf("analyse %q %s\n", text, name(lexers.Analyse(text)))
	}
	for _, s := range []struct{ lang, text string }{
		{"go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(`raw {{.X}}`) }\n"},
		{"markdown", "---\ntitle: x\n---\n# Head\n\n```go\nfunc f() {}\n```\n"},
		{"php", "<?php echo 'hi'; ?>"},
		{"phtml", "<b><?php echo 1; ?></b>"},
		{"html", "<script>var a = 1;</script><style>a{color:red}</style>"},
		{"mysql", "SELECT `a` FROM `t`"},
		{"go-html-template", "<a>{{ .X }}</a>"},
		{"yaml+jinja", "a: {{ b }}"},
		{"emacs-lisp", "(defun f () (message \"x\"))"},
		{"common-lisp", "(defun f () 1)"},
		{"erb", "<% x %>"},
		{"raku", "say 'hi';"},
	} {
		l := lexers.Get(s.lang)
		it, err := chroma.Coalesce(l).Tokenise(nil, s.text)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chromacheck:", s.lang, err)
			os.Exit(1)
		}
		fmt.Println("tokens", s.lang, name(l), it.Tokens())
	}
}

func name(l chroma.Lexer) string {
	if l == nil {
		return "(none)"
	}
	return l.Config().Name
}
