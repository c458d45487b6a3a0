package jetstream

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// recordSamples are records as stores write them (encoding/json of
// record), and JSON that only a hand or another writer makes.
func recordSamples() []string {
	t0 := time.Date(2026, 12, 7, 23, 40, 1, 123456789, time.UTC)
	full := record{
		ID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", Title: "Fix the “build” — ünïcödé \"quoted\" \\ <tag> &", Mode: "act",
		CreatedAt: t0, UpdatedAt: t0.Add(time.Second), LastSeq: 1234, Streaming: true,
		PendingInput: []byte(`{"requestId":"r1","question":"Go on?"}`), Model: "gpt-5", Agent: "copilot",
		Workspace: &history.Workspace{Path: "/home/me/my project", Dir: "/tmp/w", Branch: "pd/1"},
		Msgs:      99, Max: 1234, Unsorted: true, Append: "abcd:17", Tail: 4242,
	}
	var out []string
	for _, r := range []record{
		{},
		{ID: "c1", Msgs: 1, Append: "s:1"},
		full,
		{ID: "c2", Title: "plain title", UpdatedAt: t0, LastSeq: 9, Msgs: 3, Max: 9, Append: "s:3"},
		{ID: "c3", CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)), LastSeq: -5, Max: -1},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		out = append(out, string(b))
	}
	return append(out,
		` { "id" : "c4" , "msgs" : 2 , "append" : "x" } `,
		`{"id":"c5","title":null,"created":null,"workspace":null,"pending":null,"msgs":1}`,
		`{"id":"c6","ID":"other"}`,            // a key in another case: encoding/json matches it
		`{"id":"c7","id":"c8"}`,               // a key twice: the last wins
		`{"id":"c9","extra":{"a":[1,2,"]"]}}`, // an unknown key
		`{"id":"c\u0041","title":"tab\there"}`,
		`{"id":"c10","lastSeq":1e3}`,
		`{"id":"c11","lastSeq":012}`,
		`{"id":"c12","lastSeq":+12}`,
		`{"id":"c13","msgs":-1}`,
		`{"id":"c14","msgs":18446744073709551616}`,
		`{"id":"c15","streaming":"true"}`,
		`{"id":"c16","updated":"yesterday"}`,
		`{"id":"c17","workspace":{"path":1}}`,
		`{"id":"c18","pending":"not base64!"}`,
		`{"id":"c19"} x`,
		`{"id":"c20",}`,
		`{"id":"c21"`,
		`{"id":"c22","title":"a`+"\n"+`b"}`,
		`{"id":"c23","title":"\xff"}`,
		`{"id":"c24","unsorted":tru}`,
		`{"id":"c25","max":12-3}`,
		`[]`,
		`{}`,
		``,
		`null`,
	)
}

// TestDecodeRecordAsJSON: decodeRecord makes of every record what
// json.Unmarshal makes of it, an error where it fails, alone and decoded
// after any other record (whose equal values it takes over).
func TestDecodeRecordAsJSON(t *testing.T) {
	samples := recordSamples()
	// Records of one streaming conversation, one append after another:
	// only the changing values differ.
	base := record{ID: "conv", Title: "A title", Mode: "act", CreatedAt: time.Unix(1_700_000_000, 0).UTC(), Model: "m", Agent: "a",
		Workspace: &history.Workspace{Path: "/p", Dir: "/d"}, Streaming: true}
	for i := range 5 {
		r := base
		r.UpdatedAt = base.CreatedAt.Add(time.Duration(i) * 20 * time.Millisecond)
		r.LastSeq, r.Max, r.Msgs, r.Append = int64(10+3*i), int64(10+3*i), uint64(4+i), fmt.Sprintf("s:%d", i)
		r.Streaming = i < 4
		b, _ := json.Marshal(r)
		samples = append(samples, string(b))
	}
	check := func(t *testing.T, src string, prev *recordMemo) *recordMemo {
		t.Helper()
		var want record
		wantErr := json.Unmarshal([]byte(src), &want)
		got, err := decodeRecord(src, prev)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q after %v: error %v, json.Unmarshal's %v", src, prev != nil, err, wantErr)
		}
		if err != nil {
			return nil
		}
		if !reflect.DeepEqual(got.rec, want) {
			t.Fatalf("%q after %v:\n got  %+v\n want %+v", src, prev != nil, got.rec, want)
		}
		return got
	}
	for _, src := range samples {
		check(t, src, nil)
	}
	for _, a := range samples {
		for _, b := range samples {
			if prev := check(t, a, nil); prev != nil {
				check(t, b, prev)
			}
		}
	}
	// A streaming conversation's records are decoded without
	// json.Unmarshal: their raw values are kept, and the next one takes
	// the unchanged ones (the title's string is the previous record's).
	var prev *recordMemo
	for _, src := range samples[len(samples)-5:] {
		m := check(t, src, prev)
		if m.raw[rkID] == "" {
			t.Fatalf("%q was decoded by json.Unmarshal", src)
		}
		if prev != nil && unsafeStringData(m.rec.Title) != unsafeStringData(prev.rec.Title) {
			t.Errorf("the unchanged title was decoded again")
		}
		if prev != nil && m.rec.Workspace == prev.rec.Workspace {
			t.Errorf("the workspace is shared with the previous record, not copied")
		}
		prev = m
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

// FuzzDecodeRecord: whatever the JSON, decodeRecord agrees with
// json.Unmarshal, alone and after another record.
func FuzzDecodeRecord(f *testing.F) {
	samples := recordSamples()
	for i, s := range samples {
		f.Add(s, samples[(i+1)%len(samples)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var want record
		wantErr := json.Unmarshal([]byte(b), &want)
		var prev *recordMemo
		if m, err := decodeRecord(a, nil); err == nil {
			prev = m
		}
		got, err := decodeRecord(b, prev)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q after %q: error %v, json.Unmarshal's %v", b, a, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got.rec, want) {
			t.Fatalf("%q after %q:\n got  %+v\n want %+v", b, a, got.rec, want)
		}
	})
}

// TestRecordFieldsAreTheRecords: recordFields names every field of
// record, by its JSON key, in order, and decodes and takes each into that
// field alone: a field added to record and not to the table would send
// every record to json.Unmarshal whole.
func TestRecordFieldsAreTheRecords(t *testing.T) {
	rt := reflect.TypeFor[record]()
	if rt.NumField() != len(recordFields) {
		t.Fatalf("record has %d fields, recordFields %d", rt.NumField(), len(recordFields))
	}
	full := record{}
	if err := json.Unmarshal([]byte(recordSamples()[2]), &full); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(full)
	var raw [rkCount]string
	if !splitRecord(string(js), &raw) {
		t.Fatalf("a record as encoding/json writes it not split: %s", js)
	}
	for i, f := range recordFields {
		key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if key != f.key {
			t.Errorf("field %d: record's key %q, recordFields' %q", i, key, f.key)
			continue
		}
		var decoded, taken record
		if !f.decode(&decoded, raw[i]) {
			t.Errorf("%s: %s not decoded", f.key, raw[i])
		}
		f.take(&taken, &full)
		want := reflect.New(rt).Elem()
		want.Field(i).Set(reflect.ValueOf(full).Field(i))
		if !reflect.DeepEqual(decoded, want.Interface()) || !reflect.DeepEqual(taken, want.Interface()) {
			t.Errorf("%s: decoded %+v, taken %+v, want %+v", f.key, decoded, taken, want.Interface())
		}
	}
}

// TestTwoInts: the pack and part headers read as fmt.Sscanf read them.
func TestTwoInts(t *testing.T) {
	for _, v := range []string{"12 3", "-1 7", "0 0", "+4 5", "1  2", " 1 2", "1 2 3", "x 1", "1", "", "99999999999999999999 1", "1\t2"} {
		var a, b int64
		_, err := fmt.Sscanf(v, "%d %d", &a, &b)
		ga, gb, ok := twoInts(v)
		if ok != (err == nil) || ok && (ga != a || gb != b) {
			t.Errorf("%q: %d %d %v, Sscanf %d %d %v", v, ga, gb, ok, a, b, err)
		}
	}
}

// BenchmarkLiveRecord is what a relay following a conversation decodes of
// each live message: its pack header and its record, one append after
// another of a streaming conversation.
func BenchmarkLiveRecord(b *testing.B) {
	base := record{ID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", Title: "Write the release notes for the next version", Mode: "act",
		CreatedAt: time.Now().UTC(), Model: "gpt-5", Agent: "copilot", Streaming: true,
		Workspace: &history.Workspace{Path: "/home/me/project", Dir: "/home/me/project"}}
	hdrs := make([]nats.Header, 64)
	for i := range hdrs {
		r := base
		r.UpdatedAt = base.CreatedAt.Add(time.Duration(i) * 50 * time.Millisecond)
		r.LastSeq, r.Max, r.Msgs, r.Append = int64(100+4*i), int64(100+4*i), uint64(30+i), fmt.Sprintf("7f3a9c:%d", 30+i)
		js, _ := json.Marshal(r)
		h := nats.Header{}
		h.Set(hdrPack, fmt.Sprintf("%d %d", r.Max, 4))
		h.Set(hdrConv, string(js))
		hdrs[i] = h
	}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			h := hdrs[i%len(hdrs)]
			var mx int64
			var n int
			if _, err := fmt.Sscanf(h.Get(hdrPack), "%d %d", &mx, &n); err != nil {
				b.Fatal(err)
			}
			var r record
			if err := json.Unmarshal([]byte(h.Get(hdrConv)), &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeRecord", func(b *testing.B) {
		b.ReportAllocs()
		var prev *recordMemo
		for i := range b.N {
			h := hdrs[i%len(hdrs)]
			if _, err := parseInfo(h); err != nil {
				b.Fatal(err)
			}
			m, err := recordAfter(h, nil, prev)
			if err != nil || m == nil {
				b.Fatal(err)
			}
			prev = m
		}
	})
}
