package protocol

import (
	"reflect"
	"testing"
)

// flatFrames are frames decodeFlat takes or leaves, and whether it takes
// them: the relay's layout with every field and escape it writes, and
// what it must leave to encoding/json (which must then decode them as
// before: a fallback, not a refusal).
var flatFrames = []struct {
	frame string
	flat  bool
}{
	{`{"type":"copilot:delta","data":{"conversationId":"c","seq":2,"messageId":"m","content":"Hello"}}`, true},
	{`{"type":"copilot:delta","data":{"conversationId":"c","seq":2,"messageId":"m","content":"a\nb\t\"q\" \\ \/ \b\f\r é \u00e9 \u0000 <&>"}}` + "\n", true},
	{`{"type":"copilot:reasoning","data":{"conversationId":"c","seq":3,"messageId":"r","content":"think"}}`, true},
	{`{"type":"copilot:message","data":{"conversationId":"c","seq":9,"messageId":"m","content":"","truncated":true}}`, true},
	{`{"type":"copilot:idle","data":{"conversationId":"c","seq":10,"status":"completed"}}`, true},
	{`{"type":"copilot:idle","data":{"conversationId":"c","seq":-0,"status":"error","message":"x"}}`, true},
	{`{"type":"copilot:tool_end","data":{"conversationId":"c","seq":6,"toolCallId":"t","success":true,"denied":false,"result":"ok  \tpkg\t0.041s"}}`, true},
	{`{"type":"copilot:delta","data":{}}`, true},
	{`{"type":"copilot:delta","data":{"seq":9223372036854775807}}`, true},

	{`{"type":"copilot:delta","data":{"content":"\ud83d\ude00"}}`, false},   // a surrogate pair
	{`{"type":"copilot:delta","data":{"content":"\udead"}}`, false},         // a lone surrogate: U+FFFD
	{"{\"type\":\"copilot:delta\",\"data\":{\"content\":\"\xff\"}}", false}, // invalid UTF-8: U+FFFD
	{`{"type":"copilot:delta","data":{"Content":"case"}}`, false},           // json matches keys case-insensitively
	{`{"type":"copilot:delta","data":{"content":"a","content":"b"}}`, false},
	{`{"type":"copilot:delta","data":{"content":null}}`, false},
	{`{"type":"copilot:delta","data":{"extra":"x","seq":1}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1,"x":{"y":1}}}`, false},
	{`{"type":"copilot:delta","data":{ "seq":1}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1},"x":1}`, false},
	{`{"type":"copilot:delta","data":{"seq":1}}}`, false},
	{`{"type":"copilot:delta","data":{"seq":"1"}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1.0}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1e3}}`, false},
	{`{"type":"copilot:delta","data":{"seq":01}}`, false},
	{`{"type":"copilot:delta","data":{"seq":9223372036854775808}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1,}}`, false},
	{`{"type":"copilot:delta","data":{"seq":1}`, false},
	{`{"type":"copilot:delta","data":{"content":"a` + "\n" + `b"}}`, false},
	{`{"type":"copilot:delta","data":{"content":"\x"}}`, false},
	{`{"type":"copilot:delta","data":{"content":"\u12"}}`, false},
	{`{"type":"copilot:message","data":{"truncated":1}}`, false},
	{`{"type":"copilot:tool_start","data":{"conversationId":"c","seq":5,"toolCallId":"t","toolName":"bash"}}`, true},
	{`{"type":"copilot:tool_start","data":{"conversationId":"c","seq":5,"toolCallId":"t","toolName":"bash","arguments":{"command":"go test ./...","n":[1,{"x":"}{\"]"}],"e":{}}}}`, true},
	{`{"type":"copilot:tool_start","data":{"toolName":"bash","arguments":{ "a" : 1 }}}`, true}, // kept as it is
	{`{"type":"copilot:tool_start","data":{"toolName":"bash","arguments":{"a":}}}`, false},
	{`{"type":"copilot:tool_start","data":{"toolName":"bash","arguments":{"a":1}`, false},
	{`{"type":"copilot:tool_start","data":{"toolName":"bash","arguments":null}}`, false},
	{`{"type":"copilot:tool_start","data":{"toolName":"bash","arguments":[1]}}`, false},
	{`{"type":"copilot:tool_start","data":{"toolName":{"a":1}}}`, false},
	{`{"type":"copilot:user_message","data":{"conversationId":"c","seq":1,"messageId":"u","content":"step 1","mode":"act","sentBy":{"device":"this device","client":"other"},"agent":"demo (scripted)"}}`, true},
	{`{"type":"copilot:user_message","data":{"conversationId":"c","seq":1,"messageId":"u","content":"x","mode":"act","agent":"a","clientId":"k-1"}}`, true},
	{`{"type":"copilot:user_message","data":{"conversationId":"c","seq":1,"messageId":"u","content":"x","mode":"plan","sentBy":{}}}`, true},
	{`{"type":"copilot:user_message","data":{"conversationId":"c","seq":1,"messageId":"u","content":"x","mode":"plan"}}`, true},
	{`{"type":"copilot:user_message","data":{"sentBy":{"device":"d","client":"web","extra":1}}}`, false},
	{`{"type":"copilot:user_message","data":{"sentBy":{"device":"d","device":"e"}}}`, false},
	{`{"type":"copilot:user_message","data":{"sentBy":{"device":{"x":1}}}}`, false},
	{`{"type":"copilot:user_message","data":{"sentBy":null}}`, false},
	{`{"type":"copilot:user_message","data":{"mode":1}}`, false},
	{`{"type":"copilot:\u0064elta","data":{"seq":1}}`, false},
}

// TestDecodeFlat: what decodeFlat takes it decodes exactly as encoding/json
// does (decodeEnvelope); what it leaves still decodes as before; and it
// takes the relay's frames of its types from every recorded stream.
func TestDecodeFlat(t *testing.T) {
	for _, tt := range flatFrames {
		got, ok := decodeFlat(serverMessages, []byte(tt.frame))
		if ok != tt.flat {
			t.Errorf("%s: taken %v, want %v", tt.frame, ok, tt.flat)
		}
		want, err := decodeEnvelope(serverMessages, []byte(tt.frame))
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("%s:\nflat %#v\njson %#v (%v)", tt.frame, got.Data, want.Data, err)
		}
		if ev, derr := DecodeEvent([]byte(tt.frame)); !reflect.DeepEqual(ev, want) || (derr == nil) != (err == nil) {
			t.Errorf("%s: DecodeEvent %#v, %v; the general way %#v, %v", tt.frame, ev.Data, derr, want.Data, err)
		}
	}
	taken := map[string]int{}
	for _, frame := range recordedFrames(t) {
		want, err := decodeEnvelope(serverMessages, frame)
		if err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		got, ok := decodeFlat(serverMessages, frame)
		if !ok {
			continue
		}
		taken[got.Type]++
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nflat %#v\njson %#v", frame, got.Data, want.Data)
		}
	}
	for _, typ := range []string{TypeDelta, TypeMessage, TypeIdle, TypeToolEnd, TypeUserMessage, TypeToolStart} {
		if taken[typ] == 0 {
			t.Errorf("no recorded %s taken (taken: %v)", typ, taken)
		}
	}
	// A table without the type (the client's messages, say) leaves it.
	if _, ok := decodeFlat(map[string]func() any{}, []byte(flatFrames[0].frame)); ok {
		t.Error("taken a type the table does not have")
	}
}

// FuzzDecodeFlat: whatever decodeFlat takes, encoding/json decodes to the
// same event.
func FuzzDecodeFlat(f *testing.F) {
	for _, tt := range flatFrames {
		f.Add([]byte(tt.frame))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		got, ok := decodeFlat(serverMessages, frame)
		if !ok {
			return
		}
		want, err := decodeEnvelope(serverMessages, frame)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nflat %#v\njson %#v (%v)", frame, got.Data, want.Data, err)
		}
	})
}

// BenchmarkDecodeFlat decodes the recorded frames decodeFlat takes, with it
// (flat) and the way they were decoded before (framed).
func BenchmarkDecodeFlat(b *testing.B) {
	var frames [][]byte
	for _, frame := range recordedFrames(b) {
		if _, ok := decodeFlat(serverMessages, frame); ok {
			frames = append(frames, frame)
		}
	}
	for _, bm := range []struct {
		name   string
		decode func(map[string]func() any, []byte) (Event, bool)
	}{{"flat", decodeFlat}, {"framed", decodeFramed}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, frame := range frames {
					if _, ok := bm.decode(serverMessages, frame); !ok {
						b.Fatalf("not decoded: %s", frame)
					}
				}
			}
		})
	}
}
