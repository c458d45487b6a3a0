package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/mockhttp"
)

// anthropic serves POST /v1/messages (Claude Code adds ?beta=true).
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if !readBody(w, r, &in) {
		return
	}
	req := &Request{API: "anthropic", Model: in.Model, Stream: in.Stream}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range in.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Name    string          `json:"name"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			req.Turns = append(req.Turns, Turn{Role: m.Role, Text: mockhttp.Text(m.Content)})
			continue
		}
		var txt []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				// Claude Code wraps context in <system-reminder> blocks of
				// their own; the prompt is the text outside them.
				if !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
					txt = append(txt, b.Text)
				}
			case "tool_use":
				req.Turns = append(req.Turns, Turn{Role: "assistant", ToolName: b.Name})
			case "tool_result":
				req.Turns = append(req.Turns, Turn{Role: "tool", ToolResult: mockhttp.Text(b.Content)})
			}
		}
		if len(txt) > 0 {
			req.Turns = append(req.Turns, Turn{Role: m.Role, Text: strings.Join(txt, "\n")})
		}
	}
	rep, n := s.reply(req)
	id := fmt.Sprintf("msg_mock%d", n)
	stop := "end_turn"
	if rep.ToolCall != nil {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": rep.InputTokens, "output_tokens": rep.OutputTokens,
		"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	if !in.Stream {
		content := []any{map[string]any{"type": "text", "text": strings.Join(rep.Text, "")}}
		if rep.ToolCall != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_mock%d", n), "name": rep.ToolCall.Name, "input": rep.ToolCall.Args})
		}
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": in.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := mockhttp.NewSSE(w)
	e.Send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": in.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
	index := 0
	if len(rep.Text) > 0 {
		e.Send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range rep.Text {
			e.Send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		if rep.Hold {
			<-r.Context().Done()
			return
		}
		e.Send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		index++
	}
	if rep.ToolCall != nil {
		e.Send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_mock%d", n), "name": rep.ToolCall.Name, "input": map[string]any{}}})
		e.Send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(rep.ToolCall)}})
		e.Send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	e.Send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.OutputTokens}})
	e.Send("message_stop", map[string]any{"type": "message_stop"})
}
