package mockopenai

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads the SSE data lines of a stream.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

const conversation = `{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},
 "messages":[{"role":"system","content":"sys"},
  {"role":"user","content":[{"type":"text","text":"<current_datetime>now</current_datetime>\n\nhello"}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"done"}],
 "tools":[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"ask_user"}}]}`

func TestStreamedReply(t *testing.T) {
	srv := Start(func(r *Request) Reply {
		return Reply{Text: []string{"Hel", "lo"}, ToolCalls: []ToolCall{{ID: "call_2", Name: "bash", Arguments: `{"command":"ls"}`}}, Usage: Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 4}}
	})
	defer srv.Close()
	resp := post(t, context.Background(), srv.URL, conversation)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	ev := events(t, resp)
	if len(ev) < 6 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("events = %q", ev)
	}
	var text strings.Builder
	var finish, toolName string
	var usage map[string]any
	for _, e := range ev[:len(ev)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				toolName = tc.Function.Name
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if text.String() != "Hello" || toolName != "bash" || finish != "tool_calls" {
		t.Errorf("text %q, tool %q, finish %q", text.String(), toolName, finish)
	}
	if usage["prompt_tokens"] != float64(10) || usage["completion_tokens"] != float64(2) ||
		usage["prompt_tokens_details"].(map[string]any)["cached_tokens"] != float64(4) {
		t.Errorf("usage = %v", usage)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Prompt() != "hello" || r.Last().Role != "tool" || !r.HasTool("ask_user") || r.Model != "gpt-4.1" || !r.Stream {
		t.Errorf("request = %+v", r)
	}
	if res, ok := r.ToolResult("call_1"); !ok || res != "done" {
		t.Errorf("tool result = %q %v", res, ok)
	}
	if len(r.Messages[2].ToolCalls) != 1 || r.Messages[2].ToolCalls[0].Name != "bash" {
		t.Errorf("assistant tool calls = %+v", r.Messages[2])
	}
}

func TestWholeReplyAndWait(t *testing.T) {
	gate := make(chan struct{})
	srv := Start(func(r *Request) Reply { return Reply{Text: []string{"a", "b"}, Wait: gate} })
	defer srv.Close()
	done := make(chan *http.Response, 1)
	go func() {
		done <- post(t, context.Background(), srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	}()
	select {
	case <-done:
		t.Fatal("the reply did not wait for the gate")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	resp := <-done
	defer resp.Body.Close()
	var whole struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&whole); err != nil || whole.Choices[0].Message.Content != "ab" {
		t.Errorf("reply = %+v, %v", whole, err)
	}
}

func TestHoldEndsWithTheClient(t *testing.T) {
	srv := Start(func(r *Request) Reply { return Reply{Text: []string{"thinking"}, Hold: true} })
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, srv.URL, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "thinking") {
			break
		}
	}
	cancel() // the handler returns when the client hangs up; Close would hang otherwise
	resp.Body.Close()
}

func TestListenAndNotFound(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", func(*Request) Reply { return Reply{} })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get(strings.TrimSuffix(srv.URL, "/v1") + "/v1/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || len(srv.NotFound()) != 1 {
		t.Errorf("status %d, not found %v", resp.StatusCode, srv.NotFound())
	}
}
