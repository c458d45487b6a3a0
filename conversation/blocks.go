package conversation

import "strings"

// splitter cuts one assistant message's markdown into blocks as it streams:
// a block ends at a blank line outside a code fence, and a fenced code block
// is a block of its own. Finished blocks never change again, so the window
// parses each of them once and re-parses only the unfinished tail.
//
// Only complete lines (ending in "\n") decide structure; a partial last line
// always belongs to the tail: two backticks may still become a fence.
type splitter struct {
	buf       []byte
	lineStart int // offset of the first complete line not yet classified
	// blockStart is the offset where the current (unfinished) block begins;
	// -1 when no block is open (only blank lines since the last one).
	blockStart int
	// fence is the opening fence marker ("```", "~~~~", …) while inside a
	// fenced code block, else "".
	fence string
	// prefix is prepended to the current block's text: when a message is
	// cut inside a code fence (a tool call interrupted it) the rest of the
	// code still needs its opening fence to render as code.
	prefix string
}

// block is one piece of markdown cut by the splitter.
type block struct {
	text string // raw markdown (with its fences, for code)
	code bool   // a fenced code block
}

func newSplitter() *splitter { return &splitter{blockStart: -1} }

// write appends text and returns the blocks it finished, in order.
func (s *splitter) write(text string) []block {
	s.buf = append(s.buf, text...)
	var done []block
	for {
		nl := strings.IndexByte(string(s.buf[s.lineStart:]), '\n')
		if nl < 0 {
			break
		}
		lineEnd := s.lineStart + nl + 1
		line := string(s.buf[s.lineStart : lineEnd-1])
		done = s.classify(line, s.lineStart, lineEnd, done)
		s.lineStart = lineEnd
	}
	return done
}

// classify applies one complete line [start, end) and appends any block it
// finishes to done.
func (s *splitter) classify(line string, start, end int, done []block) []block {
	if s.fence != "" {
		if isClosingFence(line, s.fence) {
			done = append(done, block{text: s.prefix + string(s.buf[s.blockStart:end]), code: true})
			s.fence, s.prefix, s.blockStart = "", "", -1
		}
		return done
	}
	if marker := openingFence(line); marker != "" {
		if s.blockStart >= 0 {
			done = append(done, s.finish(start))
		}
		s.fence = marker
		s.blockStart = start
		return done
	}
	if strings.TrimSpace(line) == "" {
		if s.blockStart >= 0 {
			done = append(done, s.finish(start))
		}
		return done
	}
	if s.blockStart < 0 {
		s.blockStart = start
	}
	return done
}

// finish closes the current non-code block, which ends before offset end.
func (s *splitter) finish(end int) block {
	b := block{text: s.prefix + strings.TrimRight(string(s.buf[s.blockStart:end]), "\n")}
	s.prefix, s.blockStart = "", -1
	return b
}

// tail returns the unfinished block: its text and whether it is code. ok is
// false when there is nothing to show.
func (s *splitter) tail() (b block, ok bool) {
	from := s.blockStart
	if from < 0 {
		from = s.lineStart
	}
	text := string(s.buf[from:])
	if strings.TrimSpace(text) == "" && s.prefix == "" {
		return block{}, false
	}
	return block{text: s.prefix + text, code: s.fence != ""}, true
}

// cut ends the current block where the text stands now, even mid-line: the
// message continues after something else (a tool call) in the transcript.
// It returns the block that was open, if any.
func (s *splitter) cut() (block, bool) {
	b, ok := s.tail()
	if !ok {
		return block{}, false
	}
	if s.fence != "" {
		// The rest of the code block needs its fence again.
		s.prefix = s.fence + "\n"
		if !strings.HasSuffix(b.text, "\n") {
			b.text += "\n"
		}
		b.text += s.fence
	} else {
		s.prefix = ""
	}
	s.blockStart = len(s.buf)
	s.lineStart = len(s.buf)
	if s.fence == "" {
		s.blockStart = -1
	}
	return b, true
}

// text returns everything written so far.
func (s *splitter) text() string { return string(s.buf) }

// openingFence returns the fence marker when line opens a fenced code block
// (CommonMark: up to three spaces, then at least three backticks or tildes).
func openingFence(line string) string {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || len(trimmed) < 3 {
		return ""
	}
	ch := trimmed[0]
	if ch != '`' && ch != '~' {
		return ""
	}
	n := 0
	for n < len(trimmed) && trimmed[n] == ch {
		n++
	}
	if n < 3 {
		return ""
	}
	if ch == '`' && strings.ContainsRune(trimmed[n:], '`') {
		return "" // a backtick info string cannot contain backticks
	}
	return trimmed[:n]
}

// isClosingFence reports whether line closes a fence opened with marker.
func isClosingFence(line, marker string) bool {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return false
	}
	trimmed = strings.TrimRight(trimmed, " \t\r")
	if len(trimmed) < len(marker) {
		return false
	}
	for i := 0; i < len(trimmed); i++ {
		if trimmed[i] != marker[0] {
			return false
		}
	}
	return true
}

// CodeBody splits a fenced code block's markdown into its info string
// (language) and its code, without the fence lines. An unclosed fence (a
// block still streaming) yields the code so far.
func CodeBody(md string) (lang, code string) {
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	marker := openingFence(lines[0])
	if marker == "" {
		return "", md
	}
	lang = strings.TrimSpace(strings.TrimLeft(strings.TrimLeft(lines[0], " "), marker[:1]))
	if i := strings.IndexAny(lang, " \t"); i >= 0 {
		lang = lang[:i]
	}
	body := lines[1:]
	if len(body) > 0 && isClosingFence(body[len(body)-1], marker) {
		body = body[:len(body)-1]
	}
	return lang, strings.Join(body, "\n")
}
