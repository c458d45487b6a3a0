package protocol

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Encoding a frame for the wire, on the path of every delivery.

// Encode builds the frame for a message. data may be nil. Unlike
// json.Marshal it leaves <, > and & as they are: escaped, each costs six
// bytes, and a prompt of them would grow six-fold on the wire.
//
// The relay encodes every event once, for all its subscribers, so this is
// on the path of every delivery: it writes the envelope around the data
// itself, in a buffer kept between calls, and returns a copy of the
// frame: one allocation, where a fresh encoder, its growing buffer and the
// envelope's struct took three (and the frame kept the buffer's spare
// capacity, up to its own length again).
func Encode(msgType string, data any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	frame, err := e.encode(msgType, data)
	if e.buf.Cap() <= maxPooledEncoder {
		encoders.Put(e)
	}
	return frame, err
}

// encoder is a buffer and a JSON encoder writing into it, lent by encoders.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledEncoder: an encoder whose buffer grew past this (a frame of a
// large tool output) is left to the collector, not kept.
const maxPooledEncoder = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// encode lays out {"type":…,"data":…}, or {"type":…} for nil data, as
// json.Marshal of the two-field struct would but for the escaping of
// markup, and returns a copy.
func (e *encoder) encode(msgType string, data any) ([]byte, error) {
	e.buf.Reset()
	e.buf.WriteString(`{"type":`)
	if plainString(msgType) {
		// Every type the protocol defines: JSON is the bytes quoted, and
		// writing them saves boxing the string for the encoder.
		e.buf.WriteByte('"')
		e.buf.WriteString(msgType)
		e.buf.WriteByte('"')
	} else if err := e.value(msgType); err != nil {
		return nil, err
	}
	if data != nil {
		e.buf.WriteString(`,"data":`)
		if err := e.value(data); err != nil {
			return nil, err
		}
	}
	e.buf.WriteByte('}')
	return bytes.Clone(e.buf.Bytes()), nil
}

// plainString reports whether s is its own JSON string content: printable
// ASCII without a quote or a backslash (markup is not escaped here).
func plainString(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// value appends v's JSON, without the newline json.Encoder ends it with.
func (e *encoder) value(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1)
	return nil
}
