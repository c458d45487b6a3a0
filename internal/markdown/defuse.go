package markdown

import "strings"

// maxLongDestinations is how many link destinations running into the next
// "](" a text may hold before defuseLinkDestinations escapes them: real
// text has none (a URL with "](" in it is not one a person writes), and up
// to this many cost goldmark at most this many scans of the text.
const maxLongDestinations = 16

// defuseLinkDestinations keeps goldmark linear on unclosed inline links.
// For each "](" goldmark reads the destination after it up to its end (a
// space, an unmatched ")", or for "<…" a ">" or the line's end), so text
// such as "[a](x" repeated, whose destinations never end, costs it a scan
// to the end of the line for every one: 128 KB took seconds (quadratic;
// goldmark 1.8.7 still does it). When the text holds more than
// maxLongDestinations destinations that run on past the next "](", their
// "(" is escaped ("\("), so that goldmark sees no link there and shows the
// text as written: scanning up to the next "](" is what this check costs,
// so it is linear. Text without them is returned unchanged.
func defuseLinkDestinations(md string) string {
	var long []int // the index of each such "("
	for i := 0; ; {
		j := strings.Index(md[i:], "](")
		if j < 0 {
			break
		}
		open := i + j + 1
		end := len(md)
		if k := strings.Index(md[open+1:], "]("); k >= 0 {
			end = open + 1 + k
		}
		if !destinationEnds(md[open+1 : end]) {
			long = append(long, open)
		}
		if end == len(md) {
			break
		}
		i = end
	}
	if len(long) <= maxLongDestinations {
		return md
	}
	var b strings.Builder
	b.Grow(len(md) + len(long))
	last := 0
	for _, open := range long {
		b.WriteString(md[last:open])
		b.WriteByte('\\')
		last = open
	}
	b.WriteString(md[last:])
	return b.String()
}

// destinationEnds reports whether a link destination starting at s ends
// within s, as goldmark reads one (parseLinkDestination).
func destinationEnds(s string) bool {
	if strings.HasPrefix(s, "<") {
		return strings.ContainsAny(s, ">\n")
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c <= ' ' || c == 0x7f:
			return true
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return true
			}
			depth--
		}
	}
	return false
}
