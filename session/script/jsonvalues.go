package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Strict reading of a script's JSON, for parse.go: the kind of a value,
// an object's members checked against the keys a step allows (a near
// miss is named: "did you mean …"), typed optional values, and the line
// and column of a syntax error. Every message names what was expected
// and what was found, so that a hand-written script can be fixed from
// the error alone.

// JSON kinds, worded for error messages.
const (
	kindString = "a string"
	kindNumber = "a number"
	kindBool   = "true or false"
	kindObject = "an object"
	kindList   = "a list"
	kindNull   = "null"
)

// kindOf names the JSON kind of a value that is already known to be valid.
func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindNull
	}
	switch raw[0] {
	case '"':
		return kindString
	case '{':
		return kindObject
	case '[':
		return kindList
	case 't', 'f':
		return kindBool
	case 'n':
		return kindNull
	}
	return kindNumber
}

// members decodes an object and refuses keys other than allowed. what names
// the object in messages ("a turn", `"tool"`).
func members(raw json.RawMessage, what string, allowed ...string) (map[string]json.RawMessage, error) {
	if k := kindOf(raw); k != kindObject {
		return nil, fmt.Errorf("%s must be an object, not %s", what, k)
	}
	keys, m, err := orderedMembers(raw)
	if err != nil {
		return nil, err
	}
	if err := checkKeys(keys, what, allowed...); err != nil {
		return nil, err
	}
	return m, nil
}

// checkKeys refuses the first key that is not allowed, suggesting the
// allowed key it most likely misspells.
func checkKeys(keys []string, what string, allowed ...string) error {
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			msg := fmt.Sprintf("unknown key %q in %s", k, what)
			if near := nearest(k, allowed); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			return fmt.Errorf("%s; its keys are %s", msg, quoteAll(allowed))
		}
	}
	return nil
}

// orderedMembers decodes an object, keeping its keys in order and refusing a
// key given twice (encoding/json would silently keep the last one).
func orderedMembers(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, nil, err
	}
	var keys []string
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%q: %w", key, err)
		}
		if _, dup := m[key]; dup {
			return nil, nil, fmt.Errorf("key %q is given twice", key)
		}
		keys = append(keys, key)
		m[key] = v
	}
	return keys, m, nil
}

func stringValue(raw json.RawMessage, key string) (string, error) {
	if k := kindOf(raw); k != kindString {
		return "", fmt.Errorf("%q must be a string, not %s", key, k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q: %w", key, err)
	}
	return s, nil
}

// The optional* helpers read m[key]; a missing key and null both mean "not
// given".

// given returns m[key] when it is given, after checking that it is of
// kind; want words the kind in the error ("a whole number" for a number).
// A key not given returns nil, nil.
func given(m map[string]json.RawMessage, key, kind, want string) (json.RawMessage, error) {
	raw, ok := m[key]
	if !ok || kindOf(raw) == kindNull {
		return nil, nil
	}
	if k := kindOf(raw); k != kind {
		return nil, fmt.Errorf("%q must be %s, not %s", key, want, k)
	}
	return raw, nil
}

func optionalString(m map[string]json.RawMessage, key string) (string, error) {
	raw, err := given(m, key, kindString, kindString)
	if raw == nil {
		return "", err
	}
	return stringValue(raw, key)
}

func optionalStrings(m map[string]json.RawMessage, key string) ([]string, error) {
	raw, err := given(m, key, kindList, "a list of strings")
	if raw == nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%q: %w", key, err)
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, err := stringValue(item, fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func optionalBool(m map[string]json.RawMessage, key string) (*bool, error) {
	return optionalValue[bool](m, key, kindBool, kindBool, func(_ json.RawMessage, err error) error {
		return fmt.Errorf("%q: %w", key, err)
	})
}

func optionalNumber(m map[string]json.RawMessage, key string) (*float64, error) {
	return optionalValue[float64](m, key, kindNumber, kindNumber, func(raw json.RawMessage, _ error) error {
		return fmt.Errorf("%q: %s is not a number that fits", key, bytes.TrimSpace(raw))
	})
}

func optionalInteger(m map[string]json.RawMessage, key string) (*int64, error) {
	const want = "a whole number"
	return optionalValue[int64](m, key, kindNumber, want, func(raw json.RawMessage, _ error) error {
		return fmt.Errorf("%q must be %s, not %s", key, want, bytes.TrimSpace(raw))
	})
}

// optionalValue decodes m[key], given and of kind, into a T; unfit words
// a value of the kind that a T cannot hold (1.5 or 1e400 for an int64).
func optionalValue[T bool | float64 | int64](m map[string]json.RawMessage, key, kind, want string, unfit func(json.RawMessage, error) error) (*T, error) {
	raw, err := given(m, key, kind, want)
	if raw == nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, unfit(raw, err)
	}
	return &v, nil
}

// optionalObject returns the object compacted, so the events carry it
// without the file's indentation.
func optionalObject(m map[string]json.RawMessage, key string) (json.RawMessage, error) {
	raw, err := given(m, key, kindObject, kindObject)
	if raw == nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("%q: %w", key, err)
	}
	return b.Bytes(), nil
}

// syntaxCheck reports the first syntax error of data (trailing data
// included), or a document that is empty. Decoding into a RawMessage checks
// the syntax only, so a number too large for float64 is not mistaken for
// invalid JSON here.
func syntaxCheck(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the file is empty")
	}
	var v json.RawMessage
	return json.Unmarshal(data, &v)
}

// position turns a byte offset into a 1-based line and column (in bytes).
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return line, col
}

func trimJSONPrefix(s string) string { return strings.TrimPrefix(s, "json: ") }

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// nearest returns the candidate closest to key when it is close enough to
// be a typo (edit distance at most 2), else "".
func nearest(key string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(key), c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (in bytes; keys are
// ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
