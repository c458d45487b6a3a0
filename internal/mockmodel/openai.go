package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/mockhttp"
)

// openai serves POST /v1/responses, the OpenAI Responses API (Codex).
func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if !readBody(w, r, &in) {
		return
	}
	req := &Request{API: "openai", Model: in.Model, Stream: in.Stream}
	for _, t := range in.Tools {
		name := t.Name
		if name == "" {
			name = t.Type // local_shell, web_search, …
		}
		req.Tools = append(req.Tools, name)
	}
	for _, raw := range in.Input {
		var item struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Name    string          `json:"name"`
			Output  json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		switch item.Type {
		case "message", "":
			role := item.Role
			if role == "developer" || role == "system" {
				continue
			}
			t := mockhttp.Text(item.Content)
			// Codex puts its environment and instructions in user
			// messages of their own, in tags.
			if s := strings.TrimSpace(t); strings.HasPrefix(s, "<") || strings.HasPrefix(s, "# AGENTS.md") {
				continue
			}
			req.Turns = append(req.Turns, Turn{Role: role, Text: t})
		case "function_call", "custom_tool_call", "local_shell_call":
			req.Turns = append(req.Turns, Turn{Role: "assistant", ToolName: item.Name})
		case "function_call_output", "custom_tool_call_output":
			out := mockhttp.Text(item.Output)
			if out == "" {
				var o struct {
					Content string `json:"content"`
				}
				_ = json.Unmarshal(item.Output, &o)
				out = o.Content
			}
			req.Turns = append(req.Turns, Turn{Role: "tool", ToolResult: out})
		}
	}
	rep, n := s.reply(req)
	respID := fmt.Sprintf("resp_mock%d", n)
	msgID := fmt.Sprintf("msg_mock%d", n)
	var output []any
	full := strings.Join(rep.Text, "")
	msg := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": full, "annotations": []any{}}}}
	if full != "" {
		output = append(output, msg)
	}
	if rep.ToolCall != nil {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_mock%d", n),
			"call_id": fmt.Sprintf("call_mock%d", n), "name": rep.ToolCall.Name, "arguments": argsJSON(rep.ToolCall), "status": "completed"})
	}
	response := func(status string) map[string]any {
		res := map[string]any{"id": respID, "object": "response", "model": in.Model, "status": status, "output": []any{}}
		if status == "completed" {
			res["output"] = output
			res["usage"] = map[string]any{"input_tokens": rep.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": rep.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": rep.InputTokens + rep.OutputTokens}
		}
		return res
	}
	if !in.Stream {
		writeJSON(w, response("completed"))
		return
	}
	e := mockhttp.NewSSE(w)
	e.Send("response.created", map[string]any{"type": "response.created", "response": response("in_progress")})
	index := 0
	if len(rep.Text) > 0 {
		e.Send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, t := range rep.Text {
			e.Send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": msgID,
				"output_index": 0, "content_index": 0, "delta": t})
		}
		if rep.Hold {
			<-r.Context().Done()
			return
		}
		e.Send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": msg})
		index++
	}
	if rep.ToolCall != nil {
		item := output[len(output)-1]
		e.Send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
		e.Send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
	}
	e.Send("response.completed", map[string]any{"type": "response.completed", "response": response("completed")})
}
