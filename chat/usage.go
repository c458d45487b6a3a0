package chat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// turnUsage adds up what the agent reported during a turn: copilot:quota
// (one per model call) and copilot:shutdown.
type turnUsage struct {
	reports      int
	model        string
	cost         float64
	inputTokens  int64
	outputTokens int64
	haveTokens   bool
	snapshots    map[string]quotaSnapshot
	shutdown     *protocol.Shutdown
}

// quotaSnapshot is one entry of quotaSnapshots (the Copilot CLI's shape).
type quotaSnapshot struct {
	Unlimited           bool     `json:"isUnlimitedEntitlement"`
	EntitlementRequests *float64 `json:"entitlementRequests"`
	UsedRequests        *float64 `json:"usedRequests"`
	RemainingPercentage *float64 `json:"remainingPercentage"`
}

func (u *turnUsage) addQuota(q *protocol.Quota, raw []byte) {
	u.reports++
	if q.Model != "" {
		u.model = q.Model
	}
	if q.Cost != nil {
		u.cost += *q.Cost
	}
	// Token counts are not in PROTOCOL.md's copilot:quota, but a relay may
	// pass the agent's along; show them when it does.
	var extra struct {
		Data struct {
			InputTokens  *int64 `json:"inputTokens"`
			OutputTokens *int64 `json:"outputTokens"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &extra) == nil {
		if extra.Data.InputTokens != nil {
			u.inputTokens += *extra.Data.InputTokens
			u.haveTokens = true
		}
		if extra.Data.OutputTokens != nil {
			u.outputTokens += *extra.Data.OutputTokens
			u.haveTokens = true
		}
	}
	var snaps map[string]quotaSnapshot
	if len(q.QuotaSnapshots) > 0 && json.Unmarshal(q.QuotaSnapshots, &snaps) == nil && len(snaps) > 0 {
		u.snapshots = snaps
	}
}

// line is the usage line printed after each turn.
func (u *turnUsage) line() string {
	if u.reports == 0 && u.shutdown == nil {
		return "usage: none reported for this turn"
	}
	var parts []string
	if u.model != "" {
		parts = append(parts, oneLine(u.model))
	}
	if u.haveTokens {
		parts = append(parts, fmt.Sprintf("%s in / %s out tokens", thousands(u.inputTokens), thousands(u.outputTokens)))
	}
	if u.reports > 0 {
		parts = append(parts, "cost "+number(u.cost))
	}
	if q := u.quota(); q != "" {
		parts = append(parts, q)
	}
	if u.shutdown != nil {
		n := u.shutdown.TotalPremiumRequests
		unit := "premium requests"
		if n == 1 {
			unit = "premium request"
		}
		parts = append(parts, fmt.Sprintf("session ended: %s %s", number(n), unit))
	}
	return "usage: " + strings.Join(parts, " · ")
}

// quota describes the premium-request quota (or the first quota there is).
func (u *turnUsage) quota() string {
	if len(u.snapshots) == 0 {
		return ""
	}
	name := "premium_interactions"
	s, ok := u.snapshots[name]
	if !ok {
		names := make([]string, 0, len(u.snapshots))
		for k := range u.snapshots {
			names = append(names, k)
		}
		sort.Strings(names)
		name = names[0]
		s = u.snapshots[name]
	}
	label := strings.ReplaceAll(oneLine(name), "_", " ")
	if name == "premium_interactions" {
		label = "premium requests"
	}
	switch {
	case s.Unlimited:
		return label + " unlimited"
	case s.UsedRequests != nil && s.EntitlementRequests != nil:
		out := fmt.Sprintf("%s %s/%s", label, number(*s.UsedRequests), number(*s.EntitlementRequests))
		if s.RemainingPercentage != nil {
			out += fmt.Sprintf(" (%s%% left)", number(*s.RemainingPercentage))
		}
		return out
	case s.RemainingPercentage != nil:
		return fmt.Sprintf("%s %s%% left", label, number(*s.RemainingPercentage))
	}
	return ""
}

// number prints a float without trailing zeros.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// thousands prints n with thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
