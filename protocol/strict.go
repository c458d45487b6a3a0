package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// duplicateKey returns a key that an object of frame (a valid JSON value)
// holds twice, or "". encoding/json keeps the last of two, another parser
// the first: {"type":"ping","type":"copilot:delete"} must not be a ping to
// one reader and a delete to the relay, so such a frame is refused.
func duplicateKey(frame []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(frame))
	// One frame per object being read: its keys, and whether the next
	// string is a key.
	type object struct {
		keys      map[string]struct{}
		expectKey bool
	}
	var stack []*object
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			return "", false // the caller has checked the JSON
		}
		top := (*object)(nil)
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil {
					top.expectKey = true // the object is the value of a key
				}
				stack = append(stack, &object{keys: map[string]struct{}{}, expectKey: true})
				continue
			case '[':
				stack = append(stack, nil)
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
				if n := len(stack); n > 0 && stack[n-1] != nil {
					stack[n-1].expectKey = true
				}
				continue
			}
		case string:
			if top != nil && top.expectKey {
				if _, dup := top.keys[t]; dup {
					return t, true
				}
				top.keys[t] = struct{}{}
				top.expectKey = false
				continue
			}
		}
		if top != nil {
			top.expectKey = true // a value: the next string is a key
		}
	}
}

// loneSurrogate reports whether the JSON string raw escapes half of a
// UTF-16 surrogate pair alone ("\ud800"): encoding/json decodes it as
// U+FFFD, so "\ud800" and "\ufffd" would name the same thing.
func loneSurrogate(raw []byte) bool {
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, a backslash too
			continue
		}
		c, ok := hex4(raw, i+2)
		if !ok {
			return false
		}
		switch {
		case c >= 0xDC00 && c <= 0xDFFF:
			return true // a low half first
		case c >= 0xD800 && c <= 0xDBFF:
			if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return true
			}
			if lo, ok := hex4(raw, i+8); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11 // the pair
		default:
			i += 5
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(n), err == nil
}
