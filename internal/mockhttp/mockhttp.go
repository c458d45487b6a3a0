// Package mockhttp is what the loopback mocks of model providers' HTTP APIs
// share (internal/mockmodel for the APIs of the ACP agents' providers,
// session/copilot/mockopenai for the OpenAI chat completions the Copilot
// CLI calls): a test server that notes the requests for paths it does not
// serve, server-sent events written and flushed one by one, and the text of
// a message's content.
package mockhttp

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// Server is a mock's HTTP server.
type Server struct {
	srv      *httptest.Server
	notFound Log[string]
}

// Log keeps what a mock received, in order, for a test to read back: the
// requests a mock answers, those it does not serve. It is safe for
// concurrent use; its zero value is empty.
type Log[T any] struct {
	mu   sync.Mutex
	list []T
}

// Add keeps v and returns its number, from 1.
func (l *Log[T]) Add(v T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, v)
	return len(l.list)
}

// All returns what was kept, in order.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// New makes the server of mux, not started; a request mux does not route
// is answered 404 and noted (NotFound).
func New(mux *http.ServeMux) *Server {
	s := &Server{}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.notFound.Add(r.Method + " " + r.URL.Path)
		http.Error(w, "not served by the mock", http.StatusNotFound)
	})
	s.srv = httptest.NewUnstartedServer(mux)
	return s
}

// Start serves on a loopback port until Close and returns the server's
// root URL, http://127.0.0.1:PORT.
func (s *Server) Start() string {
	s.srv.Start()
	return s.srv.URL
}

// Listen serves on ln instead of a port of its own; it returns the root
// URL.
func (s *Server) Listen(ln net.Listener) string {
	s.srv.Listener.Close()
	s.srv.Listener = ln
	return s.Start()
}

// Close stops the server; streams still open are cut.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// NotFound lists the requests for paths the mock does not serve.
func (s *Server) NotFound() []string { return s.notFound.All() }

// SSE writes server-sent events and flushes each.
type SSE struct {
	w  http.ResponseWriter
	f  http.Flusher
	ok bool
}

// NewSSE answers 200 with an event stream.
func NewSSE(w http.ResponseWriter) *SSE {
	f, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &SSE{w: w, f: f, ok: true}
}

// Send writes one event of data as JSON (event "" writes data alone); it
// returns false once the client is gone.
func (e *SSE) Send(event string, data any) bool {
	raw, _ := json.Marshal(data)
	if event != "" {
		return e.write(fmt.Sprintf("event: %s\ndata: %s\n\n", event, raw))
	}
	return e.write(fmt.Sprintf("data: %s\n\n", raw))
}

// Data writes an event whose data is text as it is ("[DONE]").
func (e *SSE) Data(text string) bool { return e.write("data: " + text + "\n\n") }

func (e *SSE) write(s string) bool {
	if !e.ok {
		return false
	}
	if _, err := fmt.Fprint(e.w, s); err != nil {
		e.ok = false
		return false
	}
	if e.f != nil {
		e.f.Flush()
	}
	return true
}

// Text flattens a message's content: a string, or a list of parts with
// text (a part may hold content of its own, as a tool result does).
func Text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		if len(p.Content) > 0 {
			b.WriteString(Text(p.Content))
		}
	}
	return b.String()
}
