package protocol

import (
	"encoding/json"
	"math"
	"time"
)

// What the agent's work costs: copilot:quota for each model call, the
// credit budget, and the session's totals in copilot:shutdown.

// Quota is copilot:quota: the usage of one model call. QuotaSnapshots is
// always an object (quota name → QuotaSnapshot).
type Quota struct {
	Header
	QuotaSnapshots   json.RawMessage `json:"quotaSnapshots"`
	Model            string          `json:"model,omitempty"`
	Cost             *float64        `json:"cost,omitempty"`
	CacheReadTokens  *int64          `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int64          `json:"cacheWriteTokens,omitempty"`
	InputTokens      *int64          `json:"inputTokens,omitempty"`
	OutputTokens     *int64          `json:"outputTokens,omitempty"`
	// AICredits is what the call cost in AI credits; AICreditsStatus is
	// the agent's word on credit billing ("unavailable" with your own
	// model), passed as it came.
	AICredits       *float64 `json:"aiCredits,omitempty"`
	AICreditsStatus string   `json:"aiCreditsStatus,omitempty"`
	// CreditsPerDay (ext) is the relay's pace of spending when the call
	// was reported: the AI credits its agents spent a day, over all its
	// conversations, from its stored spend (the last PaceWindow, or since
	// its first spend when that is younger, at least a day). Sent with a
	// call that reported credits.
	CreditsPerDay *float64 `json:"creditsPerDay,omitempty"`
	// Unreported (ext), with no figures, says that the agent reports no
	// usage at all (an ACP agent such as Codex): clients say so in their
	// usage line instead of waiting for figures. It reports no call.
	Unreported bool `json:"unreported,omitempty"`
}

// PaceWindow is how far back the relay's CreditsPerDay looks.
const PaceWindow = 7 * 24 * time.Hour

// NanoAIUPerCredit converts the Copilot CLI's nano AI units to AI credits:
// a nano-AIU is 10^-9 of an AI unit, and one AI unit is one credit
// (US$0.01), as docs/protocol.md, Usage, says.
const NanoAIUPerCredit = 1e9

// Credits converts nano-AIU to credits (nil stays nil).
func Credits(nanoAIU *float64) *float64 {
	if nanoAIU == nil {
		return nil
	}
	c := *nanoAIU / NanoAIUPerCredit
	return &c
}

// Budget is copilot:budget: the relay's AI credit budget and what was
// spent against it, over every conversation, in the period that ends now
// (a sliding window of PeriodSeconds). A relay with a budget sends it to
// each connection when it opens and again whenever a figure changes; a
// relay without one never sends it. It is not a conversation event.
//
// ResetsAt is set while SpentCredits has reached BudgetCredits (copilot:send
// is refused with CodeBudgetExceeded): the moment (RFC 3339) enough of the
// spend leaves the period for new turns to start, when nothing more is
// spent. ServerTime is the relay's clock when it sent the message.
type Budget struct {
	BudgetCredits float64 `json:"budgetCredits"`
	SpentCredits  float64 `json:"spentCredits"`
	PeriodSeconds int64   `json:"periodSeconds"`
	ResetsAt      string  `json:"resetsAt,omitempty"`
	ServerTime    string  `json:"serverTime"`
}

// BudgetWarnFraction is the share of the budget at which clients warn,
// once, that it is running out.
const BudgetWarnFraction = 0.8

// Remaining is the credits left to spend in the period (0 once spent),
// rounded to the nano-AIU the figures are exact to, so that 10 - 7.9 is 2.1.
func (b *Budget) Remaining() float64 {
	left := math.Round((b.BudgetCredits-b.SpentCredits)*NanoAIUPerCredit) / NanoAIUPerCredit
	return max(0, left)
}

// Exceeded reports whether new turns are refused.
func (b *Budget) Exceeded() bool { return b.SpentCredits >= b.BudgetCredits }

// Warn reports whether the spend has reached BudgetWarnFraction of the
// budget, when a client warns.
func (b *Budget) Warn() bool { return b.SpentCredits >= BudgetWarnFraction*b.BudgetCredits }

// QuotaSnapshot is one entry of Quota.QuotaSnapshots, in the Copilot CLI's
// shape. Pointers tell a missing figure from a zero.
type QuotaSnapshot struct {
	Unlimited           bool     `json:"isUnlimitedEntitlement"`
	EntitlementRequests *float64 `json:"entitlementRequests,omitempty"`
	UsedRequests        *float64 `json:"usedRequests,omitempty"`
	RemainingPercentage *float64 `json:"remainingPercentage,omitempty"`
	ResetDate           string   `json:"resetDate,omitempty"`
	// TokenBasedBilling: the quota is counted in AI credits rather than
	// in requests (the CLI's snapshot field), so the relay's
	// CreditsPerDay says how fast it goes.
	TokenBasedBilling bool `json:"tokenBasedBilling,omitempty"`
}

// Snapshots decodes QuotaSnapshots; an empty or malformed object gives nil
// (a bring-your-own-model provider reports {}).
func (q *Quota) Snapshots() map[string]QuotaSnapshot {
	var snaps map[string]QuotaSnapshot
	if len(q.QuotaSnapshots) == 0 || json.Unmarshal(q.QuotaSnapshots, &snaps) != nil || len(snaps) == 0 {
		return nil
	}
	return snaps
}

// Shutdown is copilot:shutdown. ModelMetrics is always an object (model
// name → ModelMetric).
type Shutdown struct {
	Header
	TotalPremiumRequests float64         `json:"totalPremiumRequests"`
	ModelMetrics         json.RawMessage `json:"modelMetrics"`
	AICredits            *float64        `json:"aiCredits,omitempty"` // the session's total
}

// ModelMetric is one entry of Shutdown.ModelMetrics, in the Copilot CLI's
// shape.
type ModelMetric struct {
	Requests struct {
		Count float64 `json:"count"`
		Cost  float64 `json:"cost"`
	} `json:"requests"`
	Usage struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
		CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	} `json:"usage"`
}

// Metrics decodes ModelMetrics; a malformed object gives nil.
func (s *Shutdown) Metrics() map[string]ModelMetric {
	var m map[string]ModelMetric
	if json.Unmarshal(s.ModelMetrics, &m) != nil {
		return nil
	}
	return m
}
