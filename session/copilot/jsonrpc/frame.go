// Package jsonrpc is a JSON-RPC 2.0 peer over a byte stream with LSP-style
// framing (a "Content-Length: N" header, a blank line, then N bytes of JSON),
// the transport the GitHub Copilot CLI speaks on stdio.
//
// Both sides send requests: the two id spaces are independent, so incoming
// messages are told apart by their shape (method and id: request; method and
// no id: notification; no method: response), never by id.
package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DefaultMaxFrameSize bounds one incoming message. The CLI's largest messages
// are session events that embed tool output or a model prompt snapshot; 64 MiB
// is far above those and still stops a runaway stream from exhausting memory.
const DefaultMaxFrameSize = 64 << 20

// maxHeaderLine bounds one header line. Real headers are ~20 bytes; a longer
// line means the stream is not framed the way we expect.
const maxHeaderLine = 4096

// maxHeaderLines bounds the header block of one frame.
const maxHeaderLines = 32

// FrameError is a framing problem in the incoming stream.
//
// Recoverable is true when the frame's extent was known, so the reader has
// skipped it and the next frame can be read (a body that is too large, an
// unknown header line). When false the stream is out of sync and must be
// abandoned.
type FrameError struct {
	Reason      string
	Recoverable bool
}

func (e *FrameError) Error() string { return "jsonrpc framing: " + e.Reason }

// Reader reads framed message bodies from a stream.
type Reader struct {
	r       *bufio.Reader
	maxSize int
	// Warn, when set, receives the problems Read skipped past: a frame too
	// large, an empty frame, a line that is not a header.
	Warn func(*FrameError)
}

// NewReader returns a Reader on r. maxSize bounds one body; <= 0 means
// DefaultMaxFrameSize.
func NewReader(r io.Reader, maxSize int) *Reader {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), maxSize: maxSize}
}

// Read returns the next message body.
//
// Frames it can skip (too large, empty) are reported to Warn and skipped.
// It returns io.EOF when the stream ends cleanly between frames,
// io.ErrUnexpectedEOF when it ends inside one, and a *FrameError when the
// stream is out of sync (no or invalid Content-Length, an endless header):
// then the stream cannot be read any further.
func (fr *Reader) Read() ([]byte, error) {
	for {
		body, err := fr.readFrame()
		var fe *FrameError
		if errors.As(err, &fe) && fe.Recoverable {
			fr.warn(fe)
			continue
		}
		return body, err
	}
}

func (fr *Reader) warn(fe *FrameError) {
	if fr.Warn != nil {
		fr.Warn(fe)
	}
}

func (fr *Reader) readFrame() ([]byte, error) {
	r := fr.r
	length := -1
	lines := 0
	var junk []string
	for {
		line, err := readHeaderLine(r)
		if err != nil {
			if err == io.EOF && lines == 0 {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if line == "" {
			if lines == 0 {
				continue // stray blank lines between frames are harmless
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			// Not a header: most likely unframed output such as a stray log
			// line on stdout. Skip it and keep looking for the header.
			if len(junk) >= maxHeaderLines {
				return nil, &FrameError{Reason: fmt.Sprintf("more than %d lines that are not headers", maxHeaderLines)}
			}
			junk = append(junk, line)
			fr.warn(&FrameError{Reason: fmt.Sprintf("skipped a line that is not a header: %q", truncate(line, 80)), Recoverable: true})
			continue
		}
		lines++
		if lines > maxHeaderLines {
			return nil, &FrameError{Reason: fmt.Sprintf("more than %d header lines", maxHeaderLines)}
		}
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue // Content-Type and friends: allowed, not needed
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return nil, &FrameError{Reason: fmt.Sprintf("invalid Content-Length %q", truncate(strings.TrimSpace(value), 40))}
		}
		length = n
	}
	if length < 0 {
		return nil, &FrameError{Reason: "header block without Content-Length"}
	}
	if length == 0 {
		return nil, &FrameError{Reason: "empty message (Content-Length: 0) skipped", Recoverable: true}
	}
	if length > fr.maxSize {
		if _, err := io.CopyN(io.Discard, r, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &FrameError{Reason: fmt.Sprintf("message of %d bytes exceeds the %d-byte limit; skipped", length, fr.maxSize), Recoverable: true}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readHeaderLine reads one line ending in "\n" (a preceding "\r" is dropped),
// refusing lines longer than maxHeaderLine.
func readHeaderLine(r *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxHeaderLine {
			return "", &FrameError{Reason: fmt.Sprintf("header line longer than %d bytes: %q…", maxHeaderLine, truncate(string(buf), 80))}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(buf) > 0 && err == io.EOF {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		buf = bytes.TrimSuffix(buf[:len(buf)-1], []byte("\r"))
		return string(buf), nil
	}
}

// WriteFrame writes body as one framed message with a single Write call, so
// concurrent writers that serialise calls never interleave frames.
func WriteFrame(w io.Writer, body []byte) error {
	frame := make([]byte, 0, len(body)+32)
	frame = fmt.Appendf(frame, "Content-Length: %d\r\n\r\n", len(body))
	frame = append(frame, body...)
	_, err := w.Write(frame)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
