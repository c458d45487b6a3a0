package chat

import (
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	"github.com/pilotdesk/pilotdesk/internal/markdown"
)

// The terminal's view of an agent's markdown (docs/cli.md, Markdown): a
// small renderer on goldmark, which parses it as the window does, and
// chroma's lexers for code, both already the app's. Styles are ANSI
// attributes and the terminal's own 16 colours, so they follow the user's
// light or dark terminal theme rather than a style of ours; nothing is
// asked of the terminal (a background query would race the REPL's reader).

// Markdown's ANSI styles.
const (
	mdH1       = "1;4" // bold, underlined
	mdH2       = "1"
	mdH3       = "1;3" // h3 and below: bold italic
	mdEmphasis = "3"
	mdStrong   = "1"
	mdStrike   = "9"
	mdCode     = "36" // inline code: cyan
	mdLink     = "4;34"
	mdDim      = "2" // a link's address, a quote's bar, a rule
)

// Code tokens' colours (the terminal's palette, as above).
const (
	codeKeyword  = "35" // magenta
	codeType     = "36" // cyan
	codeFunction = "34" // blue
	codeString   = "32" // green
	codeNumber   = "33" // yellow
	codeComment  = "2;3"
	codeInserted = "32"
	codeDeleted  = "31"
)

// codeIndent is how far code blocks are indented: enough to set them
// apart, little enough to copy code from the terminal as it is.
const codeIndent = "  "

// renderMarkdown renders one block of an agent's markdown (a row of the
// fold: paragraphs, headings, lists, quotes, tables) for a terminal of
// width columns, as lines without line feeds. The agent's control
// characters are made visible (sanitize) before any style is added.
func renderMarkdown(md string, width int) []string {
	doc, src := markdown.Parse(md)
	r := &mdRender{src: src}
	return r.blocks(doc, max(width, 20), false)
}

// mdRender renders goldmark's tree of one source.
type mdRender struct {
	src []byte
}

// blocks renders the block children of n, a blank line between each two
// unless tight (a tight list's item).
func (r *mdRender) blocks(n ast.Node, width int, tight bool) []string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.block(c, width)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

func (r *mdRender) block(n ast.Node, width int) []string {
	switch b := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return wrap(r.inlines(n, ""), width)
	case *ast.Heading:
		style := mdH3
		switch b.Level {
		case 1:
			style = mdH1
		case 2:
			style = mdH2
		}
		return wrap(r.inlines(n, style), width)
	case *ast.ThematicBreak:
		return []string{sgr(mdDim, strings.Repeat("─", min(width, 40)))}
	case *ast.FencedCodeBlock:
		return renderCode(markdown.Lines(n, r.src), string(b.Language(r.src)))
	case *ast.CodeBlock:
		return renderCode(markdown.Lines(n, r.src), "")
	case *ast.HTMLBlock:
		body := markdown.Lines(n, r.src)
		if b.HasClosure() {
			body += string(b.ClosureLine.Value(r.src))
		}
		var out []string
		for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			out = append(out, sanitize(expandTabs(l)))
		}
		return out
	case *ast.Blockquote:
		bar := sgr(mdDim, "│") + " "
		inner := r.blocks(n, width-2, false)
		for i, l := range inner {
			inner[i] = bar + l
		}
		return inner
	case *ast.List:
		return r.list(b, width)
	case *east.Table:
		return r.table(b)
	}
	// Anything else (an extension's block): its inlines, or its blocks.
	if n.Type() == ast.TypeBlock && n.FirstChild() != nil && n.FirstChild().Type() == ast.TypeInline {
		return wrap(r.inlines(n, ""), width)
	}
	return r.blocks(n, width, false)
}

// bullets are an unordered list's markers by depth.
var bullets = []string{"•", "◦", "▪"}

// list renders a list: each item's first line after its marker, the
// rest under its text.
func (r *mdRender) list(l *ast.List, width int) []string {
	depth := 0
	for p := l.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.List); ok {
			depth++
		}
	}
	n := l.ChildCount()
	markerWidth := 1
	if l.IsOrdered() {
		markerWidth = len(strconv.Itoa(l.Start+n-1)) + 1
	}
	var out []string
	i := 0
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := bullets[depth%len(bullets)]
		if l.IsOrdered() {
			marker = strconv.Itoa(l.Start+i) + string(l.Marker)
		}
		marker += strings.Repeat(" ", markerWidth-len([]rune(marker))) + " "
		indent := strings.Repeat(" ", markerWidth+1)
		body := r.blocks(item, width-markerWidth-1, l.IsTight)
		if len(body) == 0 {
			body = []string{""}
		}
		if i > 0 && !l.IsTight {
			out = append(out, "")
		}
		for j, line := range body {
			switch {
			case j == 0:
				line = marker + line
			case line != "":
				line = indent + line
			}
			out = append(out, strings.TrimRight(line, " "))
		}
		i++
	}
	return out
}

// table renders a table's cells on one line each row, in columns, the
// header bold over a rule. A table wider than the terminal wraps as the
// terminal wraps it.
func (r *mdRender) table(t *east.Table) []string {
	var rows [][]string
	var header int // rows that are the header
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		_, isHeader := row.(*east.TableHeader)
		style := ""
		if isHeader {
			style = mdStrong
			header++
		}
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, strings.Join(wrap(r.inlines(cell, style), 1<<30), " "))
		}
		rows = append(rows, cells)
	}
	var widths []int
	for _, cells := range rows {
		for i, c := range cells {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(c))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := widths[i] - visibleWidth(c)
			align := east.AlignNone
			if i < len(t.Alignments) {
				align = t.Alignments[i]
			}
			switch align {
			case east.AlignRight:
				b.WriteString(strings.Repeat(" ", pad) + c)
			case east.AlignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	var out []string
	for i, cells := range rows {
		out = append(out, line(cells))
		if i == header-1 {
			rules := make([]string, len(widths))
			for j, w := range widths {
				rules[j] = strings.Repeat("─", w)
			}
			out = append(out, sgr(mdDim, strings.Join(rules, "  ")))
		}
	}
	return out
}

// piece is a run of inline text in one style; brk is a hard line break.
type piece struct {
	text, style string
	brk         bool
}

// inlines collects the inline children of n, in style.
func (r *mdRender) inlines(n ast.Node, style string) []piece {
	var out []piece
	r.collect(n, style, &out)
	return out
}

func (r *mdRender) collect(n ast.Node, style string, out *[]piece) {
	add := func(t, s string) {
		*out = append(*out, piece{text: sanitize(strings.ReplaceAll(t, "\t", " ")), style: s})
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			add(markdown.Text(c, r.src), style)
			switch {
			case c.HardLineBreak():
				*out = append(*out, piece{brk: true})
			case c.SoftLineBreak():
				add(" ", style)
			}
		case *ast.String:
			add(string(c.Value), style)
		case *ast.CodeSpan:
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					b.Write(t.Segment.Value(r.src))
					if t.SoftLineBreak() {
						b.WriteByte(' ')
					}
				}
			}
			add(b.String(), join(style, mdCode))
		case *ast.Emphasis:
			s := mdEmphasis
			if c.Level >= 2 {
				s = mdStrong
			}
			r.collect(c, join(style, s), out)
		case *east.Strikethrough:
			r.collect(c, join(style, mdStrike), out)
		case *ast.Link:
			start := len(*out)
			r.collect(c, join(style, mdLink), out)
			label := ""
			for _, p := range (*out)[start:] {
				label += p.text
			}
			if dest := string(c.Destination); dest != "" && dest != label {
				add(" ("+dest+")", join(style, mdDim))
			}
		case *ast.Image:
			start := len(*out)
			r.collect(c, join(style, mdEmphasis), out)
			if len(*out) == start {
				add("image", join(style, mdEmphasis))
			}
			add(" ("+string(c.Destination)+")", join(style, mdDim))
		case *ast.AutoLink:
			add(string(c.Label(r.src)), join(style, mdLink))
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				add(string(seg.Value(r.src)), style)
			}
		case *east.TaskCheckBox:
			box := "[ ]"
			if c.IsChecked {
				box = "[x]"
			}
			add(box+" ", style)
		default:
			r.collect(c, style, out)
		}
	}
}

// join adds an ANSI style to another.
func join(style, more string) string {
	if style == "" {
		return more
	}
	return style + ";" + more
}

// sgr wraps text in an ANSI style.
func sgr(style, text string) string {
	if style == "" || text == "" {
		return text
	}
	return "\x1b[" + style + "m" + text + "\x1b[0m"
}

// wrap lays inline pieces out in lines of at most width columns, breaking
// at spaces (a word longer than the line gets a line of its own, which the
// terminal wraps). Runs of spaces collapse to one, as markdown's do.
func wrap(pieces []piece, width int) []string {
	type word struct {
		parts []piece
		w     int
	}
	var lines []string
	var line []piece // the line's runs
	col := 0
	var cur word
	endLine := func() {
		lines = append(lines, styled(line))
		line, col = nil, 0
	}
	flushWord := func() {
		if cur.w == 0 {
			cur = word{}
			return
		}
		if col > 0 && col+1+cur.w > width {
			endLine()
		}
		if col > 0 {
			// The space between two words of one style has it too (an
			// underlined heading or link stays one line).
			space := piece{text: " "}
			if prev := line[len(line)-1].style; prev == cur.parts[0].style {
				space.style = prev
			}
			line = append(line, space)
			col++
		}
		line = append(line, cur.parts...)
		col += cur.w
		cur = word{}
	}
	for _, p := range pieces {
		if p.brk {
			flushWord()
			endLine()
			continue
		}
		for i, frag := range strings.Split(p.text, " ") {
			if i > 0 {
				flushWord()
			}
			if frag == "" {
				continue
			}
			cur.parts = append(cur.parts, piece{text: frag, style: p.style})
			cur.w += visibleWidth(frag)
		}
	}
	flushWord()
	if col > 0 {
		endLine()
	}
	return lines
}

// styled writes runs of text, each style opened and closed once for
// consecutive runs that share it.
func styled(runs []piece) string {
	var b strings.Builder
	for i := 0; i < len(runs); {
		j := i
		var t strings.Builder
		for ; j < len(runs) && runs[j].style == runs[i].style; j++ {
			t.WriteString(runs[j].text)
		}
		b.WriteString(sgr(runs[i].style, t.String()))
		i = j
	}
	return b.String()
}

// renderCode highlights a code block for the terminal, indented by
// codeIndent: the language from its fence (a name or alias chroma knows,
// such as "go" or "sh"), or plain when it names none chroma knows. Tabs
// become spaces to the next multiple of four, as editors show Go's.
func renderCode(code, lang string) []string {
	code = strings.TrimRight(code, "\n")
	if code == "" {
		return []string{""}
	}
	var lexer chroma.Lexer
	if lang != "" {
		lexer = lexers.Get(lang)
	}
	var lines []string
	var line strings.Builder
	col := 0
	emit := func(t, style string) {
		var plain strings.Builder
		col = writeExpanded(&plain, t, col, 4)
		line.WriteString(sgr(style, sanitize(plain.String())))
	}
	write := func(t, style string) {
		for i, part := range strings.Split(t, "\n") {
			if i > 0 {
				lines = append(lines, strings.TrimRight(codeIndent+line.String(), " "))
				line.Reset()
				col = 0
			}
			emit(part, style)
		}
	}
	if lexer == nil {
		write(code, "")
	} else {
		it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
		if err != nil {
			write(code, "")
		} else {
			for tok := it(); tok != chroma.EOF; tok = it() {
				write(tok.Value, tokenStyle(tok.Type))
			}
		}
	}
	lines = append(lines, strings.TrimRight(codeIndent+line.String(), " "))
	// A lexer may end the text with a line feed of its own.
	if want := strings.Count(code, "\n") + 1; len(lines) > want {
		lines = lines[:want]
	}
	return lines
}

// codeStyles is the style of each part a code token plays
// (markdown.CodeRole, as in the window); builtins look like types, and
// operators and plain text are not styled.
var codeStyles = [...]string{
	markdown.RoleKeyword:  codeKeyword,
	markdown.RoleType:     codeType,
	markdown.RoleFunction: codeFunction,
	markdown.RoleBuiltin:  codeType,
	markdown.RoleString:   codeString,
	markdown.RoleNumber:   codeNumber,
	markdown.RoleComment:  codeComment,
	markdown.RoleOperator: "",
	markdown.RoleInserted: codeInserted,
	markdown.RoleDeleted:  codeDeleted,
}

// tokenStyle is a code token's style, or "" for plain text.
func tokenStyle(t chroma.TokenType) string {
	return codeStyles[markdown.CodeRole(t)]
}

// expandTabs turns tabs into spaces to the next multiple of eight columns.
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	writeExpanded(&b, s, 0, 8)
	return b.String()
}

// writeExpanded writes s to b with each tab turned into spaces up to the
// next multiple of tab columns, s starting at column col (each rune as
// wide as on the terminal); it returns the column s ends at.
func writeExpanded(b *strings.Builder, s string, col, tab int) int {
	for _, r := range s {
		if r == '\t' {
			n := tab - col%tab
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += runeWidth(r)
	}
	return col
}
