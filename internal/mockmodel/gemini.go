package mockmodel

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/mockhttp"
)

// gemini serves POST /v1beta/models/MODEL:streamGenerateContent (?alt=sse),
// :generateContent and :countTokens.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	var in struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string                 `json:"text"`
				Thought          bool                   `json:"thought"`
				FunctionCall     *struct{ Name string } `json:"functionCall"`
				FunctionResponse *struct {
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseSchema     map[string]any `json:"responseSchema"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if !readBody(w, r, &in) {
		return
	}
	if method == "countTokens" {
		writeJSON(w, map[string]any{"totalTokens": 100})
		return
	}
	stream := method == "streamGenerateContent"
	if method != "generateContent" && !stream {
		http.Error(w, "unknown method "+method, http.StatusNotFound)
		return
	}
	usage := func(in, out int) map[string]any {
		return map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out}
	}
	candidate := func(parts []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return c
	}
	// A JSON answer (the CLI's next-speaker check and such) is the mock's.
	if schema := in.GenerationConfig.ResponseJSONSchema; schema != nil || in.GenerationConfig.ResponseSchema != nil || in.GenerationConfig.ResponseMimeType == "application/json" {
		if schema == nil {
			schema = in.GenerationConfig.ResponseSchema
		}
		raw, _ := json.Marshal(fill(schema))
		if raw == nil || string(raw) == `"ok"` {
			raw = []byte("{}")
		}
		res := map[string]any{"candidates": []any{candidate([]any{map[string]any{"text": string(raw)}}, "STOP")}, "usageMetadata": usage(10, 10), "modelVersion": model}
		if stream {
			mockhttp.NewSSE(w).Send("", res)
		} else {
			writeJSON(w, res)
		}
		return
	}
	req := &Request{API: "gemini", Model: model, Stream: stream}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	for _, c := range in.Contents {
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		var txt []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				req.Turns = append(req.Turns, Turn{Role: "assistant", ToolName: p.FunctionCall.Name})
			case p.FunctionResponse != nil:
				req.Turns = append(req.Turns, Turn{Role: "tool", ToolResult: string(p.FunctionResponse.Response)})
			case p.Text != "" && !p.Thought:
				txt = append(txt, p.Text)
			}
		}
		if len(txt) > 0 {
			req.Turns = append(req.Turns, Turn{Role: role, Text: strings.Join(txt, "\n")})
		}
	}
	rep, _ := s.reply(req)
	var call []any
	if rep.ToolCall != nil {
		call = []any{map[string]any{"functionCall": map[string]any{"name": rep.ToolCall.Name, "args": rep.ToolCall.Args}}}
	}
	if !stream {
		parts := []any{map[string]any{"text": strings.Join(rep.Text, "")}}
		writeJSON(w, map[string]any{"candidates": []any{candidate(append(parts, call...), "STOP")},
			"usageMetadata": usage(rep.InputTokens, rep.OutputTokens), "modelVersion": model})
		return
	}
	e := mockhttp.NewSSE(w)
	for _, t := range rep.Text {
		e.Send("", map[string]any{"candidates": []any{candidate([]any{map[string]any{"text": t}}, "")}, "modelVersion": model})
	}
	if rep.Hold {
		<-r.Context().Done()
		return
	}
	if call == nil {
		call = []any{map[string]any{"text": ""}}
	}
	e.Send("", map[string]any{"candidates": []any{candidate(call, "STOP")},
		"usageMetadata": usage(rep.InputTokens, rep.OutputTokens), "modelVersion": model})
}
