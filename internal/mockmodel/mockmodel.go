// Package mockmodel is a loopback mock of three model providers' APIs, for
// the end-to-end tests of real ACP agents run offline: the Anthropic
// Messages API (Claude Code), the Gemini API (the Gemini CLI) and the OpenAI
// Responses API (Codex). Each reply is scripted by one function of the
// request, whatever the API, and streamed the way that API streams it, text
// in pieces and then at most one tool call.
//
// The agents also make calls of their own beside the conversation (titles,
// classifiers, JSON answers): a call that asks for a JSON schema is answered
// by the mock itself with a value that fits the schema; the rest go to the
// script, which can tell them by their lack of tools.
package mockmodel

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/mockhttp"
)

// Request is one model call, whatever the API.
type Request struct {
	API    string // "anthropic", "gemini" or "openai"
	Model  string
	Stream bool
	Tools  []string // names of the tools offered
	Turns  []Turn   // the conversation so far, oldest first
}

// Turn is one message of a request's conversation, flattened.
type Turn struct {
	Role       string // "user", "assistant" or "tool" (a tool's result)
	Text       string
	ToolName   string // "assistant": the tool it called, if any
	ToolResult string // "tool": the result
}

// LastUser is the text of the last user message (tool results aside).
func (r *Request) LastUser() string {
	for i := len(r.Turns) - 1; i >= 0; i-- {
		if r.Turns[i].Role == "user" && r.Turns[i].Text != "" {
			return r.Turns[i].Text
		}
	}
	return ""
}

// ToolResult is the result of the call the model made last, when the
// request's last message is it.
func (r *Request) ToolResult() (string, bool) {
	if n := len(r.Turns); n > 0 && r.Turns[n-1].Role == "tool" {
		return r.Turns[n-1].ToolResult, true
	}
	return "", false
}

// Said reports whether any message of the conversation so far contains s:
// what a test asks to see that an agent kept its context.
func (r *Request) Said(s string) bool {
	for _, t := range r.Turns {
		if strings.Contains(t.Text, s) || strings.Contains(t.ToolResult, s) {
			return true
		}
	}
	return false
}

// HasTool reports whether the request offered a tool by that name.
func (r *Request) HasTool(name string) bool { return slices.Contains(r.Tools, name) }

// Reply is what the model answers.
type Reply struct {
	Text []string // streamed one piece per element
	// Hold keeps the stream open after Text until the client hangs up (an
	// abort), never finishing.
	Hold     bool
	ToolCall *ToolCall
	// InputTokens and OutputTokens are the usage reported; zero: made up.
	InputTokens, OutputTokens int
}

// ToolCall is a function call of the model's.
type ToolCall struct {
	Name string
	Args map[string]any
}

// Handler scripts the replies.
type Handler func(*Request) Reply

// Server is a running mock.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT: Anthropic's and
	// Gemini's base URL; OpenAI's is URL+"/v1".
	URL              string
	*mockhttp.Server // Close, NotFound
	handler          Handler
	calls            mockhttp.Log[*Request]
}

// Start serves on a loopback port until Close.
func Start(h Handler) *Server {
	s := &Server{handler: h}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"input_tokens": 100})
	})
	mux.HandleFunc("POST /v1beta/models/{call}", s.gemini)
	mux.HandleFunc("POST /v1/responses", s.openai)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	})
	s.Server = mockhttp.New(mux)
	s.URL = s.Server.Start()
	return s
}

// Calls returns the model calls received so far (those the script saw).
func (s *Server) Calls() []*Request { return s.calls.All() }

// reply runs the script on req and numbers the answer.
func (s *Server) reply(req *Request) (Reply, int) {
	n := s.calls.Add(req)
	rep := s.handler(req)
	if rep.InputTokens == 0 {
		rep.InputTokens = 1000
	}
	if rep.OutputTokens == 0 {
		rep.OutputTokens = 1 + len(strings.Join(rep.Text, ""))/4
	}
	return rep, n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func argsJSON(tc *ToolCall) string {
	raw, _ := json.Marshal(tc.Args)
	return string(raw)
}

// fill makes a value that fits a JSON schema: the first of an enum, empty
// strings, false, zeros, every property of an object.
func fill(schema map[string]any) any {
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			sub, _ := v.(map[string]any)
			out[k] = fill(sub)
		}
		return out
	case "array":
		return []any{}
	case "boolean":
		return false
	case "number", "integer":
		return 0
	}
	return "ok"
}
