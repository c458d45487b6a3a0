// Package mockopenai is a loopback OpenAI-compatible chat completions server
// for tests and demos: the Copilot CLI, given it as a BYOK provider, runs its
// whole agent loop offline against it. Replies are scripted by a function of
// the request, streamed as server-sent events the way OpenAI streams them
// (delta.content, delta.tool_calls, a finish reason, then a usage chunk).
package mockopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/mockhttp"
)

// Request is one chat completions call as the server received it.
type Request struct {
	Model    string
	Stream   bool
	Messages []Message
	Tools    []string // names of the tools offered
	Body     json.RawMessage
}

// Message is one chat message of a request.
type Message struct {
	Role       string
	Content    string // text parts joined
	ToolCallID string // role "tool": which call this is the result of
	ToolCalls  []ToolCall
}

// ToolCall is a function call, in a reply or in the conversation so far.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Last returns the request's last message.
func (r *Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Prompt returns the last user message without the context the Copilot CLI
// puts before the prompt ("<current_datetime>…</current_datetime>").
func (r *Request) Prompt() string {
	p := r.LastUser()
	if i := strings.LastIndex(p, "</current_datetime>"); i >= 0 {
		p = p[i+len("</current_datetime>"):]
	}
	return strings.TrimSpace(p)
}

// LastUser returns the text of the last user message.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// ToolResult returns the content of the tool message answering callID.
func (r *Request) ToolResult(callID string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Content, true
		}
	}
	return "", false
}

// HasTool reports whether the request offered a tool by that name.
func (r *Request) HasTool(name string) bool { return slices.Contains(r.Tools, name) }

// Reply is what the model answers.
type Reply struct {
	Text []string // streamed one delta per element
	// Wait, when not nil, is waited on after Text and before ToolCalls: a
	// test can hold the stream open mid-way.
	Wait <-chan struct{}
	// Hold keeps the stream open after Text until the client hangs up (an
	// abort), never finishing.
	Hold      bool
	ToolCalls []ToolCall
	Usage     Usage // zero: made up from the sizes
}

// Usage is the final usage chunk.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
}

// Handler scripts the replies.
type Handler func(*Request) Reply

// Server is a running mock.
type Server struct {
	// URL is the base URL to give as the provider, ending in /v1.
	URL              string
	*mockhttp.Server // Close, NotFound
	handler          Handler
	requests         mockhttp.Log[*Request]
}

// Start serves on a loopback port until Close.
func Start(h Handler) *Server {
	s := newServer(h)
	s.URL = s.Server.Start() + "/v1"
	return s
}

// Listen serves on addr (host:port; port 0 picks one) until Close.
func Listen(addr string, h Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mockopenai: %w", err)
	}
	s := newServer(h)
	s.URL = s.Server.Listen(ln) + "/v1"
	return s, nil
}

func newServer(h Handler) *Server {
	s := &Server{handler: h}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	s.Server = mockhttp.New(mux)
	return s
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []*Request { return s.requests.All() }

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4.1","object":"model","owned_by":"mock"}]}`)
}

// wire shapes of the request
type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		http.Error(w, "invalid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Model: wr.Model, Stream: wr.Stream, Body: body}
	for _, m := range wr.Messages {
		msg := Message{Role: m.Role, Content: mockhttp.Text(m.Content), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	id := fmt.Sprintf("chatcmpl-mock%d", s.requests.Add(req))

	reply := s.handler(req)
	usage := reply.Usage
	if usage == (Usage{}) {
		usage = Usage{PromptTokens: len(body) / 4, CompletionTokens: 1 + len(strings.Join(reply.Text, ""))/4}
	}
	if !wr.Stream {
		s.whole(w, r, id, wr.Model, reply, usage)
		return
	}
	s.stream(w, r, id, wr.Model, reply, usage)
}

type chunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []chunkChoice  `json:"choices"`
	Usage   map[string]any `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

func usageJSON(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":         u.PromptTokens,
		"completion_tokens":     u.CompletionTokens,
		"total_tokens":          u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
	}
}

func toolCallsJSON(calls []ToolCall) []map[string]any {
	var out []map[string]any
	for i, tc := range calls {
		out = append(out, map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
		})
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, reply Reply, usage Usage) {
	e := mockhttp.NewSSE(w)
	send := func(c chunk) bool {
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", time.Now().Unix(), model
		return e.Send("", c)
	}
	if !send(chunk{Choices: []chunkChoice{{Delta: map[string]any{"role": "assistant", "content": ""}}}}) {
		return
	}
	for _, t := range reply.Text {
		if !send(chunk{Choices: []chunkChoice{{Delta: map[string]any{"content": t}}}}) {
			return
		}
	}
	if reply.Hold {
		<-r.Context().Done()
		return
	}
	if reply.Wait != nil {
		select {
		case <-reply.Wait:
		case <-r.Context().Done():
			return
		}
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
		if !send(chunk{Choices: []chunkChoice{{Delta: map[string]any{"tool_calls": toolCallsJSON(reply.ToolCalls)}}}}) {
			return
		}
	}
	send(chunk{Choices: []chunkChoice{{Delta: map[string]any{}, FinishReason: &finish}}})
	send(chunk{Choices: []chunkChoice{}, Usage: usageJSON(usage)})
	e.Data("[DONE]")
}

func (s *Server) whole(w http.ResponseWriter, r *http.Request, id, model string, reply Reply, usage Usage) {
	if reply.Wait != nil {
		select {
		case <-reply.Wait:
		case <-r.Context().Done():
			return
		}
	}
	msg := map[string]any{"role": "assistant", "content": strings.Join(reply.Text, "")}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		msg["tool_calls"] = toolCallsJSON(reply.ToolCalls)
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usageJSON(usage),
	})
}
