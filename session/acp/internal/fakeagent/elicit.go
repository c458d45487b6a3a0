package fakeagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"
)

// elicitForms are the forms of "elicit K", as raw JSON so that the order of
// the fields is the one written here.
var elicitForms = map[string]string{
	"enum":    `{"message":"Which colour?","requestedSchema":{"type":"object","properties":{"colour":{"type":"string","title":"Colour","enum":["red","green","blue"]}},"required":["colour"]}}`,
	"oneof":   `{"message":"Which size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}},"required":["size"]}}`,
	"suggest": `{"message":"Which branch?","requestedSchema":{"type":"object","properties":{"branch":{"type":"string","examples":["main","dev"]}}}}`,
	"bool":    `{"message":"Delete the old logs?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete"}},"required":["confirm"]}}`,
	"string":  `{"message":"What is the project called?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Name","minLength":2}},"required":["name"]}}`,
	"int":     `{"message":"How many retries?","requestedSchema":{"type":"object","properties":{"retries":{"type":"integer","minimum":1,"maximum":5}},"required":["retries"]}}`,
	"form":    `{"message":"Set up the project.","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Name","description":"the project's name"},"colour":{"type":"string","title":"Colour","enum":["red","green","blue"]},"retries":{"type":"integer","title":"Retries"},"tags":{"type":"array","title":"Tags","items":{"type":"string","enum":["go","web","cli"]}}},"required":["name","colour","retries"]}}`,
	"url":     `{"mode":"url","message":"Sign in","elicitationId":"e1","url":"https://example.com"}`,
}

// elicit sends the elicitation/create of form kind for session id and
// returns the client's answer (its result, or its error as an error).
func (a *agent) elicit(ctx context.Context, id sdk.SessionId, kind string) (json.RawMessage, error) {
	form, ok := elicitForms[kind]
	if !ok {
		return nil, fmt.Errorf("no elicit form %q", kind)
	}
	// Spliced, not decoded and encoded again: a map would sort the fields.
	sid, _ := json.Marshal(id)
	head := `{"sessionId":` + string(sid) + `,`
	if !strings.Contains(form, `"mode"`) {
		head += `"mode":"form",`
	}
	params := json.RawMessage(head + form[1:])
	res, err := a.replies.call(ctx, a.out, sdk.ClientMethodElicitationCreate, params)
	entry := LogEntry{Method: "elicitation", Session: string(id), Params: res}
	if err != nil {
		entry.Outcome = "error: " + err.Error()
	} else {
		var r struct{ Action string }
		json.Unmarshal(res, &r)
		entry.Outcome = r.Action
	}
	a.log(entry)
	return res, err
}

// replies sits between stdin and the SDK: answers to the fake's own
// requests (ids "fake-N") go to their callers, everything else to the SDK.
type replies struct {
	pr      *io.PipeReader
	eof     chan struct{} // closed when stdin ends
	next    atomic.Int64
	mu      sync.Mutex
	waiting map[string]chan reply
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newReplies(in io.Reader) *replies {
	pr, pw := io.Pipe()
	r := &replies{pr: pr, eof: make(chan struct{}), waiting: map[string]chan reply{}}
	go func() {
		defer close(r.eof)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 1<<20), 10<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			var id string
			if json.Unmarshal(line, &msg) == nil && msg.Method == "" && json.Unmarshal(msg.ID, &id) == nil && strings.HasPrefix(id, "fake-") {
				var rep reply
				json.Unmarshal(line, &rep)
				r.mu.Lock()
				ch := r.waiting[id]
				delete(r.waiting, id)
				r.mu.Unlock()
				if ch != nil {
					ch <- rep
				}
				continue
			}
			if _, err := pw.Write(append(line, '\n')); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return r
}

func (r *replies) reader() io.Reader { return r.pr }

// call writes a request and waits for its answer, however long the client
// takes (it must answer even when the turn is cancelled).
func (r *replies) call(ctx context.Context, out io.Writer, method string, params any) (json.RawMessage, error) {
	id := fmt.Sprintf("fake-%d", r.next.Add(1))
	ch := make(chan reply, 1)
	r.mu.Lock()
	r.waiting[id] = ch
	r.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := out.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	select {
	case rep := <-ch:
		if rep.Error != nil {
			return nil, fmt.Errorf("%d %s", rep.Error.Code, rep.Error.Message)
		}
		return rep.Result, nil
	case <-r.eof:
		return nil, fmt.Errorf("stdin closed before the answer")
	}
}
