package protocol

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// recordedFrames are relay frames of every kind the conversation package's
// recorded streams hold.
func recordedFrames(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob("../conversation/testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	var frames [][]byte
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, MaxFrameBytes)
		for sc.Scan() {
			frames = append(frames, append([]byte(nil), sc.Bytes()...))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return frames
}

// TestDecodeEventOnePass: a frame as a relay writes it decodes in one pass
// to exactly what decoding its envelope and then its data gives; a frame
// laid out otherwise, or one the one pass would read differently (a type
// given twice), is decoded the general way, errors and all.
func TestDecodeEventOnePass(t *testing.T) {
	frames := recordedFrames(t)
	for _, frame := range frames {
		want, err := decodeEnvelope(serverMessages, frame)
		if err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		got, ok := decodeFramed(serverMessages, frame)
		if !ok {
			t.Errorf("not decoded in one pass: %s", frame)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\none pass %#v\ngeneral  %#v", frame, got.Data, want.Data)
		}
	}
	for _, tt := range []struct {
		frame, typ, err string
	}{
		{frame: `{"type":"copilot:delta","data":{"conversationId":"c","seq":1},"type":"copilot:idle","x":{}}`, typ: TypeIdle},
		{frame: `{"data":{"conversationId":"c","seq":1},"type":"copilot:delta"}`, typ: TypeDelta},
		{frame: `{"type":"copilot:delta","data":null}`, err: "decode copilot:delta: no data"},
		{frame: `{"type":"copilot:delta"}`, err: "decode copilot:delta: no data"},
		{frame: `{"type":"copilot:delta","data":{"seq":"one"}}`, err: "decode copilot:delta: json: cannot unmarshal string into Go struct field Delta.Header.seq of type int64"},
		{frame: `{"type":"copilot:delta","data":{"seq":1}`, err: "decode frame: unexpected end of JSON input"},
		{frame: `{"type":"copilot:\u0064elta","data":{"seq":1}}`, typ: TypeDelta},
		{frame: `{"type":"copilot:newer","data":{"seq":1}}`, typ: "copilot:newer"},
	} {
		ev, err := DecodeEvent([]byte(tt.frame))
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%s: error %v, want %s", tt.frame, err, tt.err)
		case tt.err == "" && (err != nil || ev.Type != tt.typ):
			t.Errorf("%s: %s, %v; want %s", tt.frame, ev.Type, err, tt.typ)
		}
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	frames := recordedFrames(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, frame := range frames {
			if _, err := DecodeEvent(frame); err != nil {
				b.Fatal(err)
			}
		}
	}
}
