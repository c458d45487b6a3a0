package chat

import (
	"strconv"
	"strings"
)

// mdView prints an assistant message's markdown rendered (markdown.go), on
// a colour terminal. It prints the fold's blocks (conversation's RowText
// and RowCode rows: a message cut at blank lines and code fences) each once
// it is done, so that no line printed ever needs changing (markdown read so
// far can mean something else once more comes: "**bol" is not bold yet).
// The block still streaming shows in the footer, which is redrawn in place,
// its last previewRows rows rendered as they stand. When the REPL prints a
// line of its own (a tool call, a question) while a block is unfinished,
// the block is printed as far as it came, and only the rest of it once it
// is done.
type mdView struct {
	pending *mdBlock
	// preview is the pending block's footer rendering, for the text it
	// was made of (the spinner redraws the footer ten times a second).
	preview     []string
	previewText string
	// printed holds what was printed of blocks printed before they were
	// done, by row.
	printed map[int]string
	// afterBlock: the transcript's last line ends a block; the next block
	// leaves a blank line before it.
	afterBlock bool
}

// mdBlock is one block of a message: a row of the fold.
type mdBlock struct {
	row  int
	text string // markdown, or code without its fences
	code bool
	lang string
}

// markdown shows a block that changed: printed when done, else kept as the
// block under way.
func (s *screen) markdown(b mdBlock, done bool) {
	if p := s.md.pending; p != nil && p.row != b.row {
		s.flushMarkdown()
	}
	if !done {
		s.md.pending = &b
		return
	}
	s.md.pending = nil
	s.printMarkdown(b)
}

// writing reports whether a block is under way, unprinted.
func (s *screen) writing() bool { return s.md.pending != nil }

// resetMarkdown forgets the blocks of a conversation left (its fold is
// gone, and the rows with it).
func (s *screen) resetMarkdown() { s.md = mdView{} }

// previewRows is the most rows of the footer the block under way takes: a
// footer taller than the screen could not be redrawn.
const previewRows = 8

// previewLines is the block under way rendered as far as it came, for the
// footer: its last previewRows rows, after a blank line when it will have
// one in the transcript. Nil when no block is under way.
func (s *screen) previewLines() []string {
	p := s.md.pending
	if p == nil {
		return nil
	}
	t := strings.TrimPrefix(p.text, s.md.printed[p.row])
	key := strconv.Itoa(p.row) + ":" + strconv.Itoa(s.term.width()) + ":" + t
	if key == s.md.previewText {
		return s.md.preview
	}
	cut := false
	if p.code {
		// Only the code's last lines can show: highlighting all of a long
		// block again at each delta would cost its length each time.
		if ls := strings.Split(t, "\n"); len(ls) > 2*previewRows {
			t, cut = strings.Join(ls[len(ls)-2*previewRows:], "\n"), true
		}
	}
	lines := s.render(mdBlock{row: p.row, text: t, code: p.code, lang: p.lang})
	w, n := s.term.width(), 0
	i := len(lines)
	for i > 0 && n+rows(visibleWidth(lines[i-1]), w) <= previewRows {
		n += rows(visibleWidth(lines[i-1]), w)
		i--
	}
	lines = lines[i:]
	if len(lines) > 0 && i == 0 && !cut && s.md.afterBlock {
		lines = append([]string{""}, lines...)
	}
	s.md.preview, s.md.previewText = lines, key
	return lines
}

// render renders a block, or nothing for one of blank lines.
func (s *screen) render(b mdBlock) []string {
	if strings.TrimSpace(b.text) == "" {
		return nil
	}
	if b.code {
		return renderCode(b.text, b.lang)
	}
	return renderMarkdown(b.text, s.term.width())
}

// flushMarkdown prints the block under way as far as it came.
func (s *screen) flushMarkdown() {
	p := s.md.pending
	if p == nil {
		return
	}
	s.md.pending = nil
	s.printMarkdown(*p)
	if s.md.printed == nil {
		s.md.printed = map[int]string{}
	}
	s.md.printed[p.row] = p.text
}

// printMarkdown prints a block rendered, or what of it was not printed yet.
func (s *screen) printMarkdown(b mdBlock) {
	t := b.text
	if p, ok := s.md.printed[b.row]; ok {
		delete(s.md.printed, b.row)
		// Rows only grow; one that changed otherwise is printed whole
		// rather than lost.
		t = strings.TrimPrefix(t, p)
	}
	b.text = t
	lines := s.render(b)
	if len(lines) == 0 {
		return
	}
	s.endTextLine()
	if s.md.afterBlock {
		s.out.WriteString(s.nl())
	}
	for _, l := range lines {
		s.out.WriteString(l)
		s.out.WriteString(s.nl())
	}
	s.md.afterBlock = true
}
