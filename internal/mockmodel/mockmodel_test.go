package mockmodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Each call is kept (Calls) and numbered in the reply's id, in the order
// the calls came.
func TestCallsNumbered(t *testing.T) {
	s := Start(func(r *Request) Reply { return Reply{Text: []string{"hi " + r.Model}} })
	defer s.Close()
	for i, model := range []string{"m1", "m2"} {
		resp, err := http.Post(s.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"model": "`+model+`", "messages": [{"role": "user", "content": "hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if want := []string{"msg_mock1", "msg_mock2"}[i]; err != nil || out.ID != want {
			t.Fatalf("call %d: id %q (%v), want %s", i+1, out.ID, err, want)
		}
	}
	calls := s.Calls()
	if len(calls) != 2 || calls[0].Model != "m1" || calls[1].Model != "m2" || calls[0].API != "anthropic" {
		t.Fatalf("calls: %+v", calls)
	}
}
