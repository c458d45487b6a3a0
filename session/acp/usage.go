package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/session"
)

// usageCounter turns the token counts of session/prompt's answer into one
// turn's usage. The field is unstable in ACP, and agents read it two ways:
// opencode and claude-agent-acp report the turn, the Copilot CLI reports the
// session's total so far (reset when its process restarts). For the latter
// the counter subtracts what it saw before.
type usageCounter struct {
	cumulative bool
	seen       *sdk.Usage // the last total of a cumulative agent
}

// reset starts counting anew: a new session, or a new process.
func (u *usageCounter) reset(p *process) {
	u.cumulative = p.info.AgentInfo != nil && strings.Contains(strings.ToLower(p.info.AgentInfo.Name), "copilot")
	u.seen = nil
}

// turn returns the usage of the turn that reported r, or nil when there is
// nothing to report.
func (u *usageCounter) turn(r *sdk.Usage, meta map[string]any) *session.Usage {
	if r == nil {
		r = quotaUsage(meta)
	}
	if r == nil {
		return nil
	}
	cur := *r
	if u.cumulative {
		prev, total := u.seen, cur
		u.seen = &total
		if prev != nil && cur.InputTokens >= prev.InputTokens && cur.OutputTokens >= prev.OutputTokens {
			cur.InputTokens -= prev.InputTokens
			cur.OutputTokens -= prev.OutputTokens
			cur.CachedReadTokens = minus(cur.CachedReadTokens, prev.CachedReadTokens)
			cur.CachedWriteTokens = minus(cur.CachedWriteTokens, prev.CachedWriteTokens)
		}
	}
	if cur.InputTokens == 0 && cur.OutputTokens == 0 {
		return nil // a turn cancelled before the model answered
	}
	return &session.Usage{
		InputTokens:      count(cur.InputTokens),
		OutputTokens:     count(cur.OutputTokens),
		CacheReadTokens:  optCount(cur.CachedReadTokens),
		CacheWriteTokens: optCount(cur.CachedWriteTokens),
	}
}

func minus(a, b *int) *int {
	if a == nil || b == nil || *a < *b {
		return a
	}
	d := *a - *b
	return &d
}

func count(n int) *int64 {
	v := int64(n)
	return &v
}

func optCount(n *int) *int64 {
	if n == nil {
		return nil
	}
	return count(*n)
}

// quotaUsage reads the Gemini CLI's token counts of a turn, which it puts
// in the prompt response's _meta rather than in usage:
// {"quota":{"token_count":{"input_tokens":N,"output_tokens":M},"model_usage":[…]}}.
func quotaUsage(meta map[string]any) *sdk.Usage {
	quota, _ := meta["quota"].(map[string]any)
	tc, _ := quota["token_count"].(map[string]any)
	in, ok1 := tc["input_tokens"].(float64)
	out, ok2 := tc["output_tokens"].(float64)
	if !ok1 || !ok2 || in < 0 || out < 0 {
		return nil
	}
	return &sdk.Usage{InputTokens: int(in), OutputTokens: int(out), TotalTokens: int(in + out)}
}
