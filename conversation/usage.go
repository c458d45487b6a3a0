package conversation

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Quota is one quota snapshot of a copilot:quota.
type Quota struct {
	Name             string
	Unlimited        bool
	Entitlement      float64
	Used             float64
	HasUsed          bool // the agent reported Used and Entitlement
	RemainingPercent float64
	HasRemaining     bool
	ResetDate        string
	// InCredits: Entitlement and Used are AI credits (the snapshot's
	// tokenBasedBilling), so the relay's CreditsPerDay paces it.
	InCredits bool
}

// ModelMetric is one model's totals from copilot:shutdown.
type ModelMetric struct {
	Model        string
	Requests     float64
	Cost         float64
	InputTokens  int64
	OutputTokens int64
}

// Usage is what the agent reported: for the conversation (State.Usage) or
// for the turn that runs or ran last (State.Turn). The latest value wins
// for Model, Cost, cache tokens and Quotas; calls and tokens add up.
type Usage struct {
	// Calls counts the copilot:quota reports (one per model call).
	Calls            int
	Model            string
	Cost             *float64 // the premium-request multiplier of the last call
	CostSum          float64  // the multipliers added up
	CacheReadTokens  *int64
	CacheWriteTokens *int64
	// InputTokens and OutputTokens add up what the calls reported;
	// HaveTokens says whether any did.
	InputTokens  int64
	OutputTokens int64
	CachedTokens int64 // cache reads added up
	HaveTokens   bool
	// Credits adds up the calls' AI credits (HaveCredits: any reported);
	// CreditsStatus is the agent's last word on credit billing.
	Credits       float64
	HaveCredits   bool
	CreditsStatus string
	// CreditsPerDay is the relay's pace of spending with the last call
	// that reported one (copilot:quota's creditsPerDay: every
	// conversation's spend, from the relay's stored ledger); 0: unknown.
	CreditsPerDay float64
	// Quotas are the last non-empty snapshots, premium_interactions first.
	Quotas []Quota
	// Session totals, from copilot:shutdown.
	HaveTotals           bool
	TotalPremiumRequests float64
	Models               []ModelMetric
	SessionCredits       *float64 // the session's credits, when reported
	// Unreported: the agent said it reports no usage at all
	// (copilot:quota's unreported); Empty stays true.
	Unreported bool
}

// Empty reports whether nothing has been reported yet. Tokens alone count:
// an ACP agent on your own model may report nothing else (opencode).
func (u Usage) Empty() bool {
	return u.Model == "" && u.Cost == nil && u.CacheReadTokens == nil && u.CacheWriteTokens == nil && len(u.Quotas) == 0 && !u.HaveTotals &&
		!u.HaveTokens
}

// addQuota folds one copilot:quota in.
func (u *Usage) addQuota(q *protocol.Quota) {
	if q.Unreported {
		u.Unreported = true // no call, no figures
		return
	}
	u.Calls++
	if q.Model != "" {
		u.Model = q.Model
	}
	if q.Cost != nil {
		c := *q.Cost
		u.Cost = &c
		u.CostSum += c
	}
	if q.CacheReadTokens != nil {
		n := *q.CacheReadTokens
		u.CacheReadTokens = &n
		u.CachedTokens += n
	}
	if q.AICredits != nil {
		u.Credits += *q.AICredits
		u.HaveCredits = true
	}
	if q.AICreditsStatus != "" {
		u.CreditsStatus = q.AICreditsStatus
	}
	if q.CreditsPerDay != nil && *q.CreditsPerDay > 0 {
		u.CreditsPerDay = *q.CreditsPerDay
	}
	if q.CacheWriteTokens != nil {
		n := *q.CacheWriteTokens
		u.CacheWriteTokens = &n
	}
	if q.InputTokens != nil {
		u.InputTokens += *q.InputTokens
		u.HaveTokens = true
	}
	if q.OutputTokens != nil {
		u.OutputTokens += *q.OutputTokens
		u.HaveTokens = true
	}
	snaps := q.Snapshots()
	if len(snaps) == 0 {
		return // BYOK and the like report {}: keep the last known quotas
	}
	u.Quotas = u.Quotas[:0]
	for name, sn := range snaps {
		qq := Quota{Name: name, Unlimited: sn.Unlimited, ResetDate: sn.ResetDate, InCredits: sn.TokenBasedBilling}
		if sn.EntitlementRequests != nil && sn.UsedRequests != nil {
			qq.Entitlement, qq.Used, qq.HasUsed = *sn.EntitlementRequests, *sn.UsedRequests, true
		}
		if sn.RemainingPercentage != nil {
			qq.RemainingPercent, qq.HasRemaining = *sn.RemainingPercentage, true
		}
		u.Quotas = append(u.Quotas, qq)
	}
	sort.Slice(u.Quotas, func(i, j int) bool {
		// premium_interactions first: it is the one people pay for.
		pi, pj := u.Quotas[i].Name == "premium_interactions", u.Quotas[j].Name == "premium_interactions"
		if pi != pj {
			return pi
		}
		return u.Quotas[i].Name < u.Quotas[j].Name
	})
}

// addShutdown folds copilot:shutdown in: the session's totals.
func (u *Usage) addShutdown(sd *protocol.Shutdown) {
	u.HaveTotals = true
	u.TotalPremiumRequests = sd.TotalPremiumRequests
	if sd.AICredits != nil {
		c := *sd.AICredits
		u.SessionCredits = &c
	}
	u.Models = u.Models[:0]
	for name, m := range sd.Metrics() {
		u.Models = append(u.Models, ModelMetric{Model: name, Requests: m.Requests.Count, Cost: m.Requests.Cost, InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens})
	}
	sort.Slice(u.Models, func(i, j int) bool { return u.Models[i].Model < u.Models[j].Model })
}

// Clone returns a copy that shares nothing with u, for a reader on
// another goroutine.
func (u Usage) Clone() Usage {
	u.Quotas = append([]Quota(nil), u.Quotas...)
	u.Models = append([]ModelMetric(nil), u.Models...)
	return u
}

// ---- words, the same in every front end ----

// QuotaText describes one quota snapshot, short enough for a terminal's
// usage line and the same in the window, the terminal and the web client
// (web/static/js/words.js): "12 of 300 premium requests used, 96% left",
// "chat unlimited"; "" when it says nothing.
func QuotaText(q Quota) string {
	name := strings.ReplaceAll(q.Name, "_", " ")
	if q.Name == "premium_interactions" {
		name = "premium requests" // what people call them
	}
	switch {
	case q.Unlimited:
		return name + " unlimited"
	case q.HasUsed && q.Entitlement > 0:
		s := fmt.Sprintf("%s of %s %s used", Num(q.Used), Num(q.Entitlement), name)
		if q.HasRemaining {
			s += fmt.Sprintf(", %s%% left", Num(q.RemainingPercent))
		}
		return s
	case q.HasRemaining:
		return fmt.Sprintf("%s %s%% left", name, Num(q.RemainingPercent))
	}
	return ""
}

// ownModel reports whether u is a bring-your-own-model provider's usage:
// tokens but no quota, no premium cost and no credits.
func (u Usage) ownModel() bool {
	return len(u.Quotas) == 0 && !u.HaveCredits && (u.Cost == nil || *u.Cost == 0) && (u.HaveTokens || u.CreditsStatus == "unavailable")
}

// tokenText is "1200 in / 80 out / 300 cached tokens".
func tokenText(u Usage) string {
	s := fmt.Sprintf("%s in / %s out", Tokens(u.InputTokens), Tokens(u.OutputTokens))
	if u.CachedTokens > 0 {
		s += " / " + Tokens(u.CachedTokens) + " cached"
	}
	return s + " tokens"
}

// NoUsageText is the usage line of an agent that reports no usage.
const NoUsageText = "This agent reports no usage: its turns' tokens and cost cannot be shown"

// UsageText is a conversation's usage on one line: the model, this turn's
// and the conversation's credits (or tokens, with your own model), every
// quota with its reset date and the pace, the premium multiplier and the
// cache tokens.
func UsageText(conv, turn Usage, now time.Time) string {
	if conv.Empty() {
		if conv.Unreported {
			return NoUsageText
		}
		return "No usage reported yet"
	}
	var parts []string
	if conv.Model != "" {
		parts = append(parts, "Model "+conv.Model)
	}
	switch {
	case conv.HaveCredits:
		parts = append(parts, fmt.Sprintf("this turn %s · conversation %s", CreditsText(turn.Credits), CreditsText(conv.Credits)))
	case conv.ownModel() && conv.HaveTokens:
		parts = append(parts, "this turn "+tokenText(turn), "conversation "+tokenText(conv))
	}
	for _, q := range conv.Quotas {
		s := QuotaText(q)
		if s == "" {
			continue
		}
		if d, ok := resetDay(q); ok {
			s += ", resets " + d.Format("2 Jan")
		}
		if p := Pace(q, conv.CreditsPerDay, now); p != "" {
			s += " · " + p
		}
		parts = append(parts, s)
	}
	if conv.Cost != nil && (*conv.Cost != 0 || !conv.ownModel()) {
		parts = append(parts, "×"+Num(*conv.Cost)+" premium per request")
	}
	if !conv.ownModel() && (conv.CacheReadTokens != nil || conv.CacheWriteTokens != nil) {
		var r, w int64
		if conv.CacheReadTokens != nil {
			r = *conv.CacheReadTokens
		}
		if conv.CacheWriteTokens != nil {
			w = *conv.CacheWriteTokens
		}
		parts = append(parts, fmt.Sprintf("cache %s read / %s written", Tokens(r), Tokens(w)))
	}
	return strings.Join(parts, "  ·  ")
}

// CreditsText is "0.42 credits", "1 credit", "<0.01 credits".
func CreditsText(c float64) string {
	switch {
	case c > 0 && c < 0.01:
		return "<0.01 credits"
	case c == 1:
		return "1 credit"
	}
	return Num(c) + " credits"
}

// resetDay is the quota's reset date, if it has a readable one.
func resetDay(q Quota) (time.Time, bool) {
	if q.ResetDate == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, q.ResetDate)
	return t, err == nil
}

// Pace says when a monthly quota runs out at the pace it is used: "at
// this pace it runs out on 19 Dec", or "" when it lasts until its reset,
// or nothing can be said. A quota counted in AI credits goes at the
// relay's creditsPerDay (its stored spend of the last week, every
// conversation's: how fast this user spends now, whichever conversation
// or restart); a quota counted in requests, which credits do not measure,
// or one without that figure, at its own average since the month began
// (the month before its reset date).
//
// The figure comes from the relay because only the relay has the spend of
// every conversation and keeps it; the words are here, in the fold, so
// that the window and the terminal say the same thing.
func Pace(q Quota, creditsPerDay float64, now time.Time) string {
	reset, ok := resetDay(q)
	if !ok || q.Unlimited || !q.HasUsed || q.Entitlement <= 0 || !now.Before(reset) {
		return ""
	}
	if q.Used >= q.Entitlement {
		return "used up"
	}
	perDay := creditsPerDay
	if !q.InCredits || perDay <= 0 {
		start := reset.AddDate(0, -1, 0)
		elapsed := now.Sub(start)
		if elapsed <= 0 || q.Used <= 0 {
			return ""
		}
		perDay = q.Used / elapsed.Hours() * 24
	}
	out := now.Add(time.Duration((q.Entitlement - q.Used) / perDay * 24 * float64(time.Hour)))
	if !out.Before(reset) {
		return ""
	}
	return "at this pace it runs out on " + out.Format("2 Jan")
}

// noTotalsFrom: the session ended with totals of nothing, and unreported
// says the agent reports no usage (an ACP agent; the relay's stand-in
// copilot:shutdown after a close). Its "0 premium requests" would be a
// figure nobody measured.
func (u Usage) noTotalsFrom(unreported bool) bool {
	return unreported && u.TotalPremiumRequests == 0 && len(u.Models) == 0
}

// TotalsText is the session's totals from copilot:shutdown, "" before the
// session ended.
func TotalsText(u Usage) string {
	if !u.HaveTotals {
		return ""
	}
	if u.noTotalsFrom(u.Unreported) {
		return "Session ended: this agent reports no usage"
	}
	s := "Session total: " + Plural(u.TotalPremiumRequests, "premium request")
	for _, m := range u.Models {
		s += fmt.Sprintf("  ·  %s: %s, %s tokens in / %s out", m.Model, Plural(m.Requests, "request"), Tokens(m.InputTokens), Tokens(m.OutputTokens))
	}
	return s
}

// TurnText is a turn's usage on one line, as the terminal prints it after
// each turn: the model, tokens, credits (the turn's and the
// conversation's), the premium cost, the first quota and its pace, and the
// session totals when the session ended.
func TurnText(u, conv Usage, now time.Time) string {
	if u.Calls == 0 && !u.HaveTotals {
		if conv.Unreported && conv.Empty() {
			return "usage: this agent reports none"
		}
		return "usage: none reported for this turn"
	}
	var parts []string
	if u.Model != "" {
		parts = append(parts, OneLine(u.Model, 60))
	}
	if u.HaveTokens {
		if u.CachedTokens > 0 {
			parts = append(parts, tokenText(u))
		} else {
			parts = append(parts, fmt.Sprintf("%s in / %s out tokens", Tokens(u.InputTokens), Tokens(u.OutputTokens)))
		}
	}
	if u.HaveCredits {
		parts = append(parts, fmt.Sprintf("%s (conversation %s)", CreditsText(u.Credits), CreditsText(conv.Credits)))
	}
	if u.Calls > 0 && !u.ownModel() {
		parts = append(parts, "cost "+Num(u.CostSum))
	}
	for _, q := range u.Quotas {
		if s := QuotaText(q); s != "" {
			if p := Pace(q, conv.CreditsPerDay, now); p != "" {
				s += ", " + p
			}
			parts = append(parts, s)
			break
		}
	}
	switch {
	case u.HaveTotals && u.noTotalsFrom(u.Unreported || conv.Unreported):
		parts = append(parts, "session ended")
	case u.HaveTotals:
		parts = append(parts, "session ended: "+Plural(u.TotalPremiumRequests, "premium request"))
	}
	return "usage: " + strings.Join(parts, " · ")
}

// Plural says "1 request", "2 requests", "1.5 requests".
func Plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return Num(n) + " " + what + "s"
}

// Num prints a figure with at most two decimals and no trailing zeros.
func Num(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

// Tokens prints a token count, in thousands from 10,000 on.
func Tokens(n int64) string {
	if n >= 10000 {
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%d", n)
}
