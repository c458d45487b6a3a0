package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/session"
)

// Questions: ACP's elicitation/create (form mode) onto the relay's input
// bridge (Host.Ask).
//
// Why not the SDK's own handler: in v0.13.5 the dispatcher decodes the
// request into UnstableCreateElicitationForm, a type that has no sessionId
// (the schema puts the session scope in an allOf its generator does not
// flatten), and hands the handler nothing else of the request. With one
// agent process for every conversation, a question that does not say whose
// it is cannot be put to anyone. So the line reader in front of the SDK
// (elicitReader) renames the method of each elicitation/create request to
// elicitMethod, an extension method, which the SDK passes with its raw
// params to HandleExtensionMethod; the answer goes back under the request's
// id, which is all the agent matches it by.
const elicitMethod = "_pilotdesk/elicitation/create"

// maxLine is the longest line the SDK reads (10 MiB, connection.go); the
// reader below holds at most one such line to look at it.
const maxLine = 10 << 20

// elicitReader passes the agent's stdout through to the SDK line by line,
// renaming the method of elicitation/create requests (see elicitMethod).
// Only lines that contain the method's name are decoded.
// It also tells order each line it passes on (orderer).
type elicitReader struct {
	r     *bufio.Reader
	order *orderer
	out   []byte // what is left of the current line
	err   error
}

func newElicitReader(r io.Reader, order *orderer) io.Reader {
	return &elicitReader{r: bufio.NewReaderSize(r, 64<<10), order: order}
}

var elicitName = []byte(`"` + sdk.ClientMethodElicitationCreate + `"`)

func (e *elicitReader) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		e.out, e.err = e.line()
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// line reads the next line whole (up to maxLine; a longer one is passed on
// as it is, and the SDK refuses it) and renames its method if need be.
func (e *elicitReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := e.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line = append(line, chunk...)
			if len(line) > maxLine {
				return line, nil
			}
			continue
		}
		if line == nil {
			line = append([]byte(nil), chunk...) // ReadSlice's buffer is reused
		} else {
			line = append(line, chunk...)
		}
		if len(line) > 0 && bytes.Contains(line, elicitName) {
			line = renameElicitation(line)
		}
		if e.order != nil {
			e.order.sawLine(line)
		}
		return line, err
	}
}

// renameElicitation gives an elicitation/create request the method
// elicitMethod; any other line comes back unchanged.
func renameElicitation(line []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || method != sdk.ClientMethodElicitationCreate || msg["id"] == nil {
		return line // a notification, a response, or the name inside some text
	}
	msg["method"], _ = json.Marshal(elicitMethod)
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(out, '\n')
}

// HandleExtensionMethod receives the renamed elicitation/create requests;
// any other extension method is unknown to pilotdesk.
func (r *router) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != elicitMethod {
		return nil, sdk.NewMethodNotFound(method)
	}
	req, err := parseElicitation(params)
	if err != nil {
		r.a.log.Warn("acp: an elicitation/create pilotdesk cannot show", "err", err)
		return nil, invalidParams(err)
	}
	s, p := r.session(req.SessionID)
	if s == nil {
		// Not a conversation's: nobody to ask. "cancel" is ACP's answer for
		// a question the user never saw.
		return elicitCancel(), nil
	}
	// The text and tool rows the agent sent before asking come first.
	r.order.wait(ctx)
	return s.onElicitation(ctx, p, req)
}

// invalidParams is the JSON-RPC error for a question pilotdesk cannot
// put, with the reason as its message: the agent, or its model, reads it.
func invalidParams(err error) *sdk.RequestError {
	e := sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	e.Message = err.Error()
	return e
}

// elicitation is an elicitation/create request as pilotdesk reads it.
type elicitation struct {
	SessionID sdk.SessionId
	Message   string
	Fields    []field // in the order the schema lists them
}

// field is one property of the requested schema.
type field struct {
	Name        string
	Type        string // string, boolean, integer, number, array
	Title       string
	Description string
	Required    bool
	// Options are an enum's values (for a oneOf: the consts), Labels what
	// the user sees of them (a oneOf's titles; else the values).
	Options []string
	Labels  []string
	// Suggest: the options are only suggestions (JSON Schema's examples),
	// so an answer of the user's own is allowed.
	Suggest   bool
	MinLength *int
	MaxLength *int
	Pattern   string
	Minimum   *float64
	Maximum   *float64
	MinItems  *int
	MaxItems  *int
}

// parseElicitation decodes the raw params of elicitation/create. The
// properties are read in the order the agent wrote them, which is the order
// their questions are asked in.
func parseElicitation(params json.RawMessage) (elicitation, error) {
	var raw struct {
		SessionID       sdk.SessionId   `json:"sessionId"`
		RequestID       json.RawMessage `json:"requestId"`
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema struct {
			Properties json.RawMessage `json:"properties"`
			Required   []string        `json:"required"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return elicitation{}, fmt.Errorf("elicitation/create: %w", err)
	}
	if raw.Mode != "" && raw.Mode != "form" {
		return elicitation{}, fmt.Errorf("elicitation/create: pilotdesk asks only form-mode questions (it advertises elicitation.form), not %q", raw.Mode)
	}
	if raw.SessionID == "" {
		return elicitation{}, errors.New("elicitation/create: pilotdesk answers only questions tied to a session (sessionId), and this one names none")
	}
	req := elicitation{SessionID: raw.SessionID, Message: strings.TrimSpace(raw.Message)}
	names, props, err := orderedObject(raw.RequestedSchema.Properties)
	if err != nil {
		return elicitation{}, fmt.Errorf("elicitation/create: requestedSchema.properties: %w", err)
	}
	required := map[string]bool{}
	for _, n := range raw.RequestedSchema.Required {
		required[n] = true
	}
	for i, name := range names {
		f, err := parseField(name, props[i])
		if err != nil {
			return elicitation{}, fmt.Errorf("elicitation/create: field %q: %w", name, err)
		}
		f.Required = required[name]
		req.Fields = append(req.Fields, f)
	}
	if req.Message == "" && len(req.Fields) == 0 {
		return elicitation{}, errors.New("elicitation/create: no message and no fields: nothing to ask")
	}
	return req, nil
}

// orderedObject returns an object's keys and values in the order written
// (a Go map forgets it). An absent or null object is empty.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		values = append(values, v)
	}
	return names, values, nil
}

func parseField(name string, raw json.RawMessage) (field, error) {
	var p struct {
		Type        string   `json:"type"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Enum        []string `json:"enum"`
		EnumNames   []string `json:"enumNames"`
		OneOf       []struct {
			Const string `json:"const"`
			Title string `json:"title"`
		} `json:"oneOf"`
		Examples  []any    `json:"examples"`
		MinLength *int     `json:"minLength"`
		MaxLength *int     `json:"maxLength"`
		Pattern   string   `json:"pattern"`
		Minimum   *float64 `json:"minimum"`
		Maximum   *float64 `json:"maximum"`
		MinItems  *int     `json:"minItems"`
		MaxItems  *int     `json:"maxItems"`
		Items     struct {
			Enum  []string `json:"enum"`
			AnyOf []struct {
				Const string `json:"const"`
				Title string `json:"title"`
			} `json:"anyOf"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return field{}, err
	}
	f := field{Name: name, Type: p.Type, Title: strings.TrimSpace(p.Title), Description: strings.TrimSpace(p.Description),
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum, MinItems: p.MinItems, MaxItems: p.MaxItems}
	switch p.Type {
	case "string":
		switch {
		case len(p.OneOf) > 0:
			for _, o := range p.OneOf {
				f.Options = append(f.Options, o.Const)
				f.Labels = append(f.Labels, cmpOr(o.Title, o.Const))
			}
		case len(p.Enum) > 0:
			f.Options = p.Enum
			f.Labels = p.Enum
			if len(p.EnumNames) == len(p.Enum) {
				f.Labels = p.EnumNames
			}
		default:
			for _, e := range p.Examples {
				if s, ok := e.(string); ok && s != "" {
					f.Options = append(f.Options, s)
				}
			}
			f.Labels = f.Options
			f.Suggest = len(f.Options) > 0
		}
		// A pattern Go cannot read (JSON Schema's are ECMAScript's, with
		// look-arounds Go lacks) is not checked here: the agent checks
		// the answer itself, and the question is still worth asking.
		if _, err := regexp.Compile(p.Pattern); p.Pattern != "" && err == nil {
			f.Pattern = p.Pattern
		}
	case "boolean", "integer", "number":
	case "array":
		if len(p.Items.AnyOf) > 0 {
			for _, o := range p.Items.AnyOf {
				f.Options = append(f.Options, o.Const)
				f.Labels = append(f.Labels, cmpOr(o.Title, o.Const))
			}
		} else {
			f.Options, f.Labels = p.Items.Enum, p.Items.Enum
		}
		if len(f.Options) == 0 {
			return field{}, errors.New("a multi-select field lists no options")
		}
	default:
		return field{}, fmt.Errorf("pilotdesk cannot ask for a value of type %q", p.Type)
	}
	return f, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Answers to elicitation/create.
func elicitCancel() sdk.UnstableCreateElicitationResponse {
	return sdk.UnstableCreateElicitationResponse{Cancel: &sdk.UnstableCreateElicitationCancel{}}
}

func elicitDecline() sdk.UnstableCreateElicitationResponse {
	return sdk.UnstableCreateElicitationResponse{Decline: &sdk.UnstableCreateElicitationDecline{}}
}

// Labels of a boolean field's approval, and of the approval that confirms a
// form with no fields.
const (
	yesLabel = "Yes"
	noLabel  = "No"
)

// onElicitation puts the form's fields to the user one after another
// through Host.Ask and answers the agent once, with every value:
//
//   - accept with the content, when each field was answered;
//   - decline, when the user rejected a question (the relay then ends the
//     turn as rejected, as for any rejected question);
//   - cancel, when the turn was aborted or the session closed before the
//     answers, or when the relay timed a question out: the user did not
//     answer, which is what ACP's cancel says. The relay has already sent
//     copilot:user_input_timeout, and the agent's turn goes on.
//
// A question the relay refuses (ErrInvalidRequest: it said why in a
// copilot:error) fails the request with that reason.
func (s *Session) onElicitation(ctx context.Context, p *process, req elicitation) (any, error) {
	turnCtx, ours := s.turnOf(p)
	if !ours {
		return elicitCancel(), nil
	}
	// The question ends with the connection's request, the session or the
	// turn.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	defer context.AfterFunc(turnCtx, cancel)()

	// The text streamed so far is a message of its own, shown before the
	// question; what the agent says after the answer starts the next.
	s.sync(func() { s.st.endMessage() })

	content := map[string]any{}
	if len(req.Fields) == 0 {
		// A message and nothing to fill in: a confirmation.
		if _, err := s.host.Ask(actx, session.InputRequest{Question: req.Message, Choices: []string{"Continue", "Cancel"}, InputType: "approval"}); err != nil {
			return s.unanswered(actx, err)
		}
	}
	for i, f := range req.Fields {
		v, err := s.askField(actx, req, i, f)
		if err != nil {
			return s.unanswered(actx, err)
		}
		content[f.Name] = v
	}
	s.log.Info("acp: the user answered the agent's question", "fields", len(req.Fields))
	return sdk.UnstableCreateElicitationResponse{Accept: &sdk.UnstableCreateElicitationAccept{Content: content}}, nil
}

// unanswered maps why a question got no answer onto ACP's answers.
func (s *Session) unanswered(ctx context.Context, err error) (any, error) {
	s.log.Info("acp: the agent's question was not answered", "err", err)
	switch {
	case errors.Is(err, session.ErrRejected):
		return elicitDecline(), nil
	case errors.Is(err, session.ErrInvalidRequest):
		return nil, invalidParams(err)
	case errors.Is(err, session.ErrTimeout), ctx.Err() != nil:
		return elicitCancel(), nil
	}
	return nil, fmt.Errorf("the question could not be put to the user: %w", err)
}

// askField asks for one field's value until the answer fits its schema,
// saying what was wrong each time it asks again.
func (s *Session) askField(ctx context.Context, req elicitation, i int, f field) (any, error) {
	hint := ""
	for {
		in := fieldQuestion(req, i, f, hint)
		ans, err := s.host.Ask(ctx, in)
		if err != nil {
			return nil, err
		}
		v, problem := fieldValue(f, ans)
		if problem == "" {
			return v, nil
		}
		hint = problem
	}
}

// fieldQuestion words field i of req as a relay question: a boolean is an
// approval, options a choice, anything else a text question.
func fieldQuestion(req elicitation, i int, f field, hint string) session.InputRequest {
	var b strings.Builder
	if hint != "" {
		b.WriteString(hint)
		b.WriteString("\n\n")
	}
	b.WriteString(req.Message)
	label := cmpOr(f.Title, f.Name)
	if len(req.Fields) > 1 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "(%d of %d) %s", i+1, len(req.Fields), label)
		if f.Description != "" {
			b.WriteString(": " + f.Description)
		}
	} else if f.Description != "" && f.Description != req.Message {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(f.Description)
	} else if req.Message == "" {
		b.WriteString(label)
	}
	if c := constraints(f); c != "" {
		b.WriteString(" (" + c + ")")
	}
	q := session.InputRequest{Question: strings.TrimSpace(b.String())}
	switch {
	case f.Type == "boolean":
		q.InputType, q.Choices = "approval", []string{yesLabel, noLabel}
	case f.Type == "string" && len(f.Options) > 0:
		allow := f.Suggest
		q.InputType, q.Choices, q.AllowFreeform = "choice", f.Labels, &allow
	default:
		q.InputType = "text"
	}
	return q
}

// constraints says what a text answer must be, for the question.
func constraints(f field) string {
	var parts []string
	switch f.Type {
	case "integer":
		parts = append(parts, "a whole number")
	case "number":
		parts = append(parts, "a number")
	case "array":
		parts = append(parts, "one or more of "+strings.Join(f.Labels, ", ")+", separated by commas")
	}
	if f.Minimum != nil {
		parts = append(parts, "at least "+formatNumber(*f.Minimum))
	}
	if f.Maximum != nil {
		parts = append(parts, "at most "+formatNumber(*f.Maximum))
	}
	if f.MinLength != nil && *f.MinLength > 1 {
		parts = append(parts, fmt.Sprintf("at least %d characters", *f.MinLength))
	}
	if f.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("at most %d characters", *f.MaxLength))
	}
	return strings.Join(parts, ", ")
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fieldValue turns an answer into the field's value, or says why it does
// not fit.
func fieldValue(f field, ans session.Answer) (any, string) {
	text := strings.TrimSpace(ans.Text)
	switch f.Type {
	case "boolean":
		// The relay answers an approval only with approve; reject is a
		// rejection of the whole question (ErrRejected).
		return true, ""
	case "string":
		if len(f.Options) > 0 {
			if ans.Index >= 0 && ans.Index < len(f.Options) {
				return f.Options[ans.Index], ""
			}
			for i, l := range f.Labels {
				if l == ans.Text {
					return f.Options[i], ""
				}
			}
			if !f.Suggest {
				return nil, fmt.Sprintf("“%s” is not one of the choices.", clip(ans.Text))
			}
		}
		n := utf8.RuneCountInString(ans.Text)
		if f.MinLength != nil && n < *f.MinLength {
			return nil, fmt.Sprintf("The answer is %d characters long; at least %d are needed.", n, *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return nil, fmt.Sprintf("The answer is %d characters long; at most %d fit.", n, *f.MaxLength)
		}
		if f.Pattern != "" && !regexp.MustCompile(f.Pattern).MatchString(ans.Text) {
			return nil, fmt.Sprintf("“%s” does not have the form asked for (%s).", clip(ans.Text), f.Pattern)
		}
		return ans.Text, ""
	case "integer", "number":
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Sprintf("“%s” is not a number.", clip(ans.Text))
		}
		if f.Type == "integer" && v != math.Trunc(v) {
			return nil, fmt.Sprintf("“%s” is not a whole number.", clip(ans.Text))
		}
		if f.Minimum != nil && v < *f.Minimum {
			return nil, fmt.Sprintf("%s is less than %s.", text, formatNumber(*f.Minimum))
		}
		if f.Maximum != nil && v > *f.Maximum {
			return nil, fmt.Sprintf("%s is more than %s.", text, formatNumber(*f.Maximum))
		}
		if f.Type == "integer" {
			return int64(v), ""
		}
		return v, ""
	case "array":
		var picked []string
		for _, part := range strings.Split(text, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			found := false
			for i, l := range f.Labels {
				if strings.EqualFold(l, part) || strings.EqualFold(f.Options[i], part) {
					picked, found = append(picked, f.Options[i]), true
					break
				}
			}
			if !found {
				return nil, fmt.Sprintf("“%s” is not one of the options.", clip(part))
			}
		}
		if f.MinItems != nil && len(picked) < *f.MinItems {
			return nil, fmt.Sprintf("Pick at least %d.", *f.MinItems)
		}
		if f.MaxItems != nil && len(picked) > *f.MaxItems {
			return nil, fmt.Sprintf("Pick at most %d.", *f.MaxItems)
		}
		if picked == nil {
			picked = []string{}
		}
		return picked, ""
	}
	return ans.Text, ""
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
