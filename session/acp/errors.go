package acp

import (
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// authRequiredCode is the JSON-RPC error an agent answers when its user
// must sign in first.
const authRequiredCode = -32000

// authHint tells a person how to sign in, from the agent's auth methods
// (copilot: "Log in with Copilot CLI: Run `copilot login` in the terminal").
func authHint(methods []sdk.AuthMethod) string {
	var hints []string
	for _, m := range methods {
		raw, err := json.Marshal(m)
		if err != nil {
			continue
		}
		var d struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if json.Unmarshal(raw, &d) != nil || d.Name == "" {
			continue
		}
		h := d.Name
		if d.Description != "" {
			h += ": " + d.Description
		}
		hints = append(hints, h)
	}
	if len(hints) == 0 {
		return "sign in as the agent's documentation says (usually by running it once in a terminal), then try again"
	}
	return "sign in first (" + strings.Join(hints, "; ") + "), then try again"
}

// rpcMessage is what an agent's error says, without the JSON around it.
func rpcMessage(err error) string {
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	msg := re.Message
	if re.Data != nil {
		if data, err := json.Marshal(re.Data); err == nil && len(data) <= 300 {
			msg += " " + string(data)
		}
	}
	return msg
}
