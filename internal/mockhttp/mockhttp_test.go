package mockhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// TestServer: a routed path streams its events; one that is not is
// answered 404 and noted.
func TestServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		e := NewSSE(w)
		e.Send("start", map[string]int{"n": 1})
		e.Send("", "piece")
		e.Data("[DONE]")
	})
	s := New(mux)
	url := s.Start()
	defer s.Close()

	resp, err := http.Get(url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "event: start\ndata: {\"n\":1}\n\ndata: \"piece\"\n\ndata: [DONE]\n\n"
	if string(body) != want || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream %q (%s), want %q", body, resp.Header.Get("Content-Type"), want)
	}
	resp, err = http.Post(url+"/elsewhere", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !slices.Equal(s.NotFound(), []string{"POST /elsewhere"}) {
		t.Errorf("an unrouted request: %d, noted %q", resp.StatusCode, s.NotFound())
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "ab"},
		{`[{"type":"tool_result","content":[{"type":"text","text":"inner"}]}]`, "inner"},
		{`{"not":"content"}`, ""},
	} {
		if got := Text(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("Text(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// TestLog: each Add gets a number of its own, from 1, also when they
// race, and All lists what was added in the order of those numbers.
func TestLog(t *testing.T) {
	var l Log[int]
	if l.All() != nil {
		t.Fatalf("an empty log: %v", l.All())
	}
	nums := make([]int, 50)
	var wg sync.WaitGroup
	for i := range nums {
		wg.Go(func() { nums[i] = l.Add(i) })
	}
	wg.Wait()
	all := l.All()
	if len(all) != len(nums) {
		t.Fatalf("%d kept, want %d", len(all), len(nums))
	}
	for i, n := range nums {
		if n < 1 || n > len(all) || all[n-1] != i {
			t.Fatalf("Add(%d) got number %d; the log is %v", i, n, all)
		}
	}
}
