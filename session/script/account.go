package script

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/session"
)

// NewDemo returns the scripted agent playing the built-in demo s as a user
// of a real agent would see it: every completed turn reports usage (a turn
// with no usage step of its own reports the demo's first one), and the
// premium requests used add up over the agent's turns, all conversations
// alike: a report's usedRequests is the previous report's plus its cost,
// its remainingPercentage what that leaves of the entitlement, and its
// resetDate the first day of next month, as a monthly quota's is (the
// script's own date, fixed when it was written, would soon be in the
// past: "resets 1 Dec" on 7 Dec). The first report of a month's counts
// are the script's.
//
// With opts.AccountFile the count is kept there and goes on after a
// restart, within the month, as a real account's does (it restarted at
// the script's 42 with every start of the app).
//
// A script played with New reports exactly what its usage steps say
// (docs/script-agent.md); only the demo keeps an account.
func NewDemo(s *Script, opts DemoOptions) session.Agent {
	a := New(s).(*Agent)
	acct := &account{template: firstUsage(s), now: time.Now, file: opts.AccountFile, log: cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))}
	acct.load()
	a.account = acct
	return a
}

// DemoOptions are NewDemo's.
type DemoOptions struct {
	// AccountFile keeps the demo's premium requests used ("": in memory
	// only, from the script's figure at every start).
	AccountFile string
	// Logger hears of an account file that cannot be read or written.
	Logger *slog.Logger
}

// firstUsage is the first usage step of s, or nil.
func firstUsage(s *Script) *session.Usage {
	for _, t := range s.Turns {
		for _, st := range t.Steps {
			if u, ok := st.(UsageStep); ok {
				return &u.Usage
			}
		}
	}
	return nil
}

// account is the demo's premium-request quota, shared by the agent's
// sessions.
type account struct {
	// template is what a turn without a usage step reports (nil: nothing).
	template *session.Usage
	// now is the clock the reset date is reckoned from.
	now func() time.Time

	// file keeps month and used across restarts ("": none); log hears
	// why it could not.
	file string
	log  *slog.Logger

	mu      sync.Mutex
	started bool    // a report has been made this month
	month   string  // the month of the last report, "2026-12"
	used    float64 // premium requests used, as last reported
}

// savedAccount is the account file's content.
type savedAccount struct {
	Month string  `json:"month"`
	Used  float64 `json:"usedRequests"`
}

// load takes the count of the account file, if it holds one.
func (a *account) load() {
	if a.file == "" {
		return
	}
	b, err := os.ReadFile(a.file)
	var saved savedAccount
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err == nil:
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		a.log.Warn("demo: the premium requests used are counted again from the script's figure", "file", a.file, "err", err)
		return
	}
	a.started, a.month, a.used = true, saved.Month, saved.Used
}

// save writes the count to the account file. a.mu is held, so that the
// file ends with the last count.
func (a *account) saveLocked() {
	if a.file == "" {
		return
	}
	b, _ := json.Marshal(savedAccount{Month: a.month, Used: a.used})
	if err := atomicfile.WriteFile(a.file, b, atomicfile.Private); err != nil {
		a.log.Warn("demo: the premium requests used could not be kept for the next start", "file", a.file, "err", err)
	}
}

// charge returns u with its premium_interactions snapshot saying what the
// account has used once u's cost is added. A report without that snapshot
// (or with an unreadable one) is returned as it is.
func (a *account) charge(u session.Usage) session.Usage {
	var snaps map[string]map[string]any
	if json.Unmarshal(u.QuotaSnapshots, &snaps) != nil {
		return u
	}
	snap, ok := snaps["premium_interactions"]
	if !ok || snap == nil {
		return u
	}
	cost := 1.0
	if u.Cost != nil {
		cost = *u.Cost
	}
	now := a.now()
	a.mu.Lock()
	if month := now.UTC().Format("2006-01"); !a.started || a.month != month {
		// The first report, or the first of a new month: the quota
		// starts again where the script says.
		a.started, a.month = true, month
		a.used, _ = snap["usedRequests"].(float64)
	} else {
		a.used += cost
	}
	used := a.used
	a.saveLocked()
	a.mu.Unlock()

	snap["usedRequests"] = used
	if _, ok := snap["resetDate"]; ok {
		snap["resetDate"] = nextMonth(now).Format(time.RFC3339)
	}
	if total, _ := snap["entitlementRequests"].(float64); total > 0 {
		// Whole percents, as the demo's own figures are.
		snap["remainingPercentage"] = math.Max(0, math.Round(100*(total-used)/total))
	}
	raw, err := json.Marshal(snaps)
	if err != nil {
		return u
	}
	u.QuotaSnapshots = raw
	return u
}

// nextMonth is midnight UTC of the first day of the month after t's.
func nextMonth(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// cloneUsage copies u, so that what a turn emits shares nothing with the
// script.
func cloneUsage(u session.Usage) session.Usage {
	return session.Usage{
		Model:            u.Model,
		Cost:             clonePtr(u.Cost),
		InputTokens:      clonePtr(u.InputTokens),
		OutputTokens:     clonePtr(u.OutputTokens),
		CacheReadTokens:  clonePtr(u.CacheReadTokens),
		CacheWriteTokens: clonePtr(u.CacheWriteTokens),
		QuotaSnapshots:   slices.Clone(u.QuotaSnapshots),
		NanoAIU:          clonePtr(u.NanoAIU),
		AICreditsStatus:  u.AICreditsStatus,
	}
}
