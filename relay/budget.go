package relay

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The AI credit budget (docs/protocol.md, Budget). Every copilot:quota's
// aiCredits is a spend, of whichever conversation; the spend of the last
// period (a sliding window, 30 days by default) is summed over all of them.
// Once it has reached the budget, copilot:send is refused with
// budget_exceeded and starts nothing; a turn already running goes on to its
// end, so a turn may cross the budget.
//
// The spend is kept in the history store's ledger (history.Ledger), so a
// restart does not forget it: a spend goes into the committer's next batch,
// which is written in one transaction and holds the copilot:quota that
// reported it or an event before it. So a spend a client was shown is
// stored, SIGKILL or not. Like the store's, the relay's own tally keeps one
// entry per UTC hour, which counts until a period after its hour's latest
// spend.
//
// A relay with a budget sends copilot:budget to each connection as it opens
// and to all of them when a figure changes: a spend (coalesced over
// budgetDelay), or an hour's spend leaving the period.
//
// Several relays sharing a store (serve --nats) share one ledger, and so
// one budget: when the store says that any relay added to it
// (history.SpendWatcher), the budget reads the ledger again, coalesced over
// budgetDelay, and the others' spend counts here at once, in copilot:budget
// and in the refusal of a send, rather than from this relay's next start.

// DefaultBudgetPeriod is the budget's period when Config.BudgetPeriod is 0.
const DefaultBudgetPeriod = 30 * 24 * time.Hour

// budgetDelay is how long spends gather before copilot:budget goes out: a
// turn's model calls in quick succession make one message.
const budgetDelay = 100 * time.Millisecond

// budgetSyncWait bounds how long copilot:budget waits for the events
// queued before it to be written (flush).
const budgetSyncWait = 5 * time.Second

// budget is the relay's tally of spend and its budget.
type budget struct {
	r      *Relay
	limit  int64 // the budget in nano-AIU; 0: none
	period time.Duration
	// durable: the store is a history.Ledger, so spends go into its
	// batches; otherwise the tally lasts as long as the relay.
	durable bool
	ledger  history.Ledger // the store, when durable

	mu      sync.Mutex      // guards the fields below; a leaf lock, taken under a conversation's
	entries []history.Spend // the spend of the period, one entry per UTC hour, oldest first
	unsaved []history.Spend // spent and not yet in a batch the store took (durable only)
	timer   *time.Timer     // the next copilot:budget to every connection (limit > 0)
	due     time.Time       // when timer fires
	closed  bool
	flushes sync.WaitGroup // an armed timer, until its flush has returned

	// The ledger read again when another relay spends (watch).
	watchCtx  context.Context // the relay's: ends when it closes
	reread    *time.Timer     // the next read of the ledger; nil: none due
	rereading sync.WaitGroup  // an armed reread, until it has returned
}

// newBudget reads the spend of the period from the store's ledger.
func newBudget(r *Relay, credits float64, period time.Duration) (*budget, error) {
	switch {
	case math.IsNaN(credits) || math.IsInf(credits, 0) || credits < 0 || credits*protocol.NanoAIUPerCredit > math.MaxInt64/2:
		return nil, fmt.Errorf("relay: the credit budget must be a number of credits from 0 (none) up, not %v", credits)
	case period < 0:
		return nil, fmt.Errorf("relay: the budget's period must be positive, not %v", period)
	case period == 0:
		period = DefaultBudgetPeriod
	}
	b := &budget{r: r, limit: int64(math.Round(credits * protocol.NanoAIUPerCredit)), period: period}
	ledger, ok := r.store.(history.Ledger)
	b.durable, b.ledger = ok, ledger
	if !ok {
		if b.limit > 0 {
			r.log.Warn("relay: this history store keeps no spend: the credit budget counts only what is spent while the relay runs", "store", fmt.Sprintf("%T", r.store))
		}
		return b, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entries, err := ledger.Spent(ctx, b.r.budgetClock().Add(-period))
	if err != nil {
		return nil, fmt.Errorf("relay: read the credits spent: %w", err)
	}
	b.entries = entries
	if b.limit > 0 {
		spent, _ := b.tallyLocked(b.r.budgetClock())
		r.log.Info("relay: credit budget", "budgetCredits", credits, "period", period, "spentCredits", float64(spent)/protocol.NanoAIUPerCredit)
	}
	return b, nil
}

// spend records nanoAIU spent at at. It is called under a conversation's
// lock before the copilot:quota that reports it is handed to the
// committer, so the batch that stores that event, or one before it, holds
// the spend.
func (b *budget) spend(at time.Time, nanoAIU float64) {
	n := int64(math.Round(nanoAIU))
	if math.IsNaN(nanoAIU) || n <= 0 {
		return
	}
	s := history.Spend{At: at, NanoAIU: n}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tallyLocked(at) // drops what left the period
	b.entries = history.AddSpend(b.entries, s)
	if b.durable {
		b.unsaved = append(b.unsaved, s)
	}
	b.armLocked(at.Add(budgetDelay))
}

// watch makes the budget count the spend of the other relays that share
// the store, as they spend, when the store can say when that is
// (history.SpendWatcher); it does nothing otherwise. ctx ends when the
// relay closes, and the watch with it.
func (b *budget) watch(ctx context.Context) error {
	w, ok := b.r.store.(history.SpendWatcher)
	if !ok || !b.durable {
		return nil
	}
	b.mu.Lock()
	b.watchCtx = ctx
	b.mu.Unlock()
	if err := w.WatchSpend(ctx, b.changed); err != nil {
		return fmt.Errorf("relay: watch the credits the other relays spend: %w", err)
	}
	b.changed() // what they spent between the first read and the watch
	return nil
}

// changed is called when any relay added to the ledger: it is read again
// in budgetDelay, once for all the changes until then.
func (b *budget) changed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.reread != nil {
		return // a read is due, and sees this change too
	}
	b.rereading.Add(1)
	b.reread = time.AfterFunc(budgetDelay, b.read)
}

// read reads the ledger again (outside mu: it is a network round trip)
// and takes the spend of every relay from it. Figures that changed go
// out in copilot:budget at once, and a send is refused by the new tally.
//
// The ledger lacks what this relay has spent and not yet stored (unsaved),
// and may lack or hold a batch the committer is writing during the read.
// So each hour's entry becomes the larger of what the relay had and what
// the ledger says plus the unsaved spend: both count nothing twice and
// nothing of another relay's that the ledger did not hold, and every spend
// of this relay is in the first.
func (b *budget) read() {
	defer b.rereading.Done()
	b.mu.Lock()
	b.reread = nil // a change from now on reads again
	ctx, closed := b.watchCtx, b.closed
	b.mu.Unlock()
	if closed {
		return
	}
	now := b.r.budgetClock()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	stored, err := b.ledger.Spent(rctx, now.Add(-b.period))
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			b.r.log.Warn("relay: could not read the credits spent on the other relays; the next change reads again", "err", err)
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	before, _ := b.tallyLocked(now)
	for _, s := range b.unsaved {
		stored = history.AddSpend(stored, s)
	}
	b.entries = maxSpend(b.entries, stored)
	if after, _ := b.tallyLocked(now); after != before {
		b.armLocked(now)
	}
}

// maxSpend merges two tallies of the same ledger hour by hour (both
// oldest first, one entry per hour), taking the larger spend of each hour
// and the later time.
func maxSpend(a, b []history.Spend) []history.Spend {
	out := make([]history.Spend, 0, max(len(a), len(b)))
	for len(a) > 0 || len(b) > 0 {
		var c int
		switch {
		case len(a) == 0:
			c = 1
		case len(b) == 0:
			c = -1
		default:
			c = history.SpendHour(a[0].At).Compare(history.SpendHour(b[0].At))
		}
		switch {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			e := history.Spend{At: a[0].At, NanoAIU: max(a[0].NanoAIU, b[0].NanoAIU)}
			if b[0].At.After(e.At) {
				e.At = b[0].At
			}
			out, a, b = append(out, e), a[1:], b[1:]
		}
	}
	return out
}

// take hands the unsaved spends to the committer for its next batch.
func (b *budget) take() []history.Spend {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.unsaved
	b.unsaved = nil
	return s
}

// giveBack returns the spends of a batch the store failed to write; the
// next batch takes them again.
func (b *budget) giveBack(s []history.Spend) {
	if len(s) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unsaved = append(s, b.unsaved...)
}

// tallyLocked drops the entries that left the period at now and returns
// the spend of the period and when it next falls (zero: it cannot).
func (b *budget) tallyLocked(now time.Time) (spent int64, falls time.Time) {
	cutoff := now.Add(-b.period)
	i := 0
	for i < len(b.entries) && !b.entries[i].At.After(cutoff) {
		i++
	}
	b.entries = slices.Delete(b.entries, 0, i)
	for _, e := range b.entries {
		spent += e.NanoAIU
	}
	if len(b.entries) > 0 {
		falls = b.entries[0].At.Add(b.period)
	}
	return spent, falls
}

// resetsAtLocked is when the spend falls below the budget if nothing more
// is spent: when enough of the oldest entries have left the period.
// tallyLocked has just run.
func (b *budget) resetsAtLocked(spent int64) time.Time {
	for _, e := range b.entries {
		spent -= e.NanoAIU
		if spent < b.limit {
			return e.At.Add(b.period)
		}
	}
	return time.Time{} // no entries: nothing is spent
}

// perDay is the pace of spending at now, in credits a day, for
// copilot:quota's creditsPerDay: what the ledger holds of the last
// protocol.PaceWindow (or of the budget's period, if shorter), over that
// window, or over the time since the first spend kept when that is
// shorter, and never less than a day (a first call is not a day's pace).
// nil when nothing was spent in the window. It lives here, beside the
// ledger it reads, because only the relay sees every conversation's
// spend, and keeps it across restarts.
func (b *budget) perDay(now time.Time) *float64 {
	window := min(protocol.PaceWindow, b.period)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tallyLocked(now)
	cutoff := now.Add(-window)
	var sum int64
	for _, e := range b.entries {
		if e.At.After(cutoff) {
			sum += e.NanoAIU
		}
	}
	if sum <= 0 {
		return nil
	}
	span := window
	if first := history.SpendHour(b.entries[0].At); first.After(cutoff) {
		span = now.Sub(first)
	}
	span = max(span, 24*time.Hour)
	rate := float64(sum) / protocol.NanoAIUPerCredit / (span.Hours() / 24)
	return &rate
}

// refusal is the reason copilot:send is refused now, or "".
func (b *budget) refusal() string {
	if b.limit == 0 {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.r.budgetClock()
	spent, _ := b.tallyLocked(now)
	if spent < b.limit {
		return ""
	}
	return fmt.Sprintf("the AI credit budget is used up: spent %s of %s in the last %s. "+
		"No new turn starts until %s, when enough of that spend is older than %s; "+
		"to go on sooner, raise the budget (--budget-credits, or Budget in the window's Settings)",
		creditsText(spent), creditsOf(b.limit), periodText(b.period),
		b.resetsAtLocked(spent).UTC().Format("2 Jan 2006 15:04 UTC"), periodText(b.period))
}

// messageLocked is copilot:budget as of now, and when its figures change
// next without a spend (zero: never).
func (b *budget) messageLocked(now time.Time) ([]byte, time.Time) {
	spent, falls := b.tallyLocked(now)
	d := protocol.Budget{
		BudgetCredits: float64(b.limit) / protocol.NanoAIUPerCredit,
		SpentCredits:  float64(spent) / protocol.NanoAIUPerCredit,
		PeriodSeconds: int64(b.period / time.Second),
		ServerTime:    protocol.FormatTime(now),
	}
	if spent >= b.limit {
		d.ResetsAt = protocol.FormatTime(b.resetsAtLocked(spent))
	}
	frame, err := protocol.Encode(protocol.TypeBudget, &d)
	if err != nil {
		b.r.log.Error("relay: encode copilot:budget", "err", err)
		return nil, falls
	}
	return frame, falls
}

// greet sends copilot:budget to a connection that just opened. Under mu,
// so that it is not overtaken by an older message of a flush under way.
func (b *budget) greet(c *conn) {
	if b.limit == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if frame, _ := b.messageLocked(b.r.budgetClock()); frame != nil {
		c.enqueue(frame)
	}
}

// armLocked makes the next copilot:budget go out at at, unless one is due
// sooner.
func (b *budget) armLocked(at time.Time) {
	if b.limit == 0 || b.closed {
		return
	}
	if b.timer != nil {
		if !at.Before(b.due) {
			return
		}
		if !b.timer.Stop() {
			return // firing now: its flush waits for mu and sees this change
		}
		b.flushes.Done()
	}
	b.due = at
	b.flushes.Add(1)
	b.timer = time.AfterFunc(time.Until(at), b.flush)
}

// flush sends copilot:budget to every connection and arms the timer for
// the next hour's spend to leave the period.
func (b *budget) flush() {
	defer b.flushes.Done()
	// The events whose spend the message counts are queued for the
	// committer before the spend is (spend): they go out first, so that no
	// client hears of a spend before the turn that made it. Sent first
	// (writes spaced by CommitInterval, or a busy machine), the terminal
	// took it for news between turns and said it in the middle of the
	// user's next one. A store that does not answer holds it back
	// budgetSyncWait at most.
	ctx, cancel := context.WithTimeout(b.r.ctx, budgetSyncWait)
	b.r.commit.sync(ctx)
	cancel()
	b.r.mu.Lock()
	conns := make([]*conn, 0, len(b.r.conns))
	for c := range b.r.conns {
		conns = append(conns, c)
	}
	b.r.mu.Unlock()

	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	if b.closed {
		return
	}
	frame, falls := b.messageLocked(b.r.budgetClock())
	if frame != nil {
		// Connections opened since the list was taken were greeted with
		// figures at least as new.
		for _, c := range conns {
			c.enqueue(frame)
		}
	}
	if !falls.IsZero() {
		b.armLocked(falls)
	}
}

// close stops the messages and the reads of the ledger, and waits for a
// flush or a read under way (the relay's context has ended: a read
// returns at once).
func (b *budget) close() {
	b.mu.Lock()
	b.closed = true
	if b.timer != nil && b.timer.Stop() {
		b.flushes.Done()
	}
	b.timer = nil
	if b.reread != nil && b.reread.Stop() {
		b.rereading.Done()
	}
	b.reread = nil
	b.mu.Unlock()
	b.flushes.Wait()
	b.rereading.Wait()
}

// creditsText writes credits as a person reads them: 10.2, 0.35, 7.
func creditsText(nanoAIU int64) string {
	c := float64(nanoAIU) / protocol.NanoAIUPerCredit
	if r := math.Round(c*100) / 100; r != 0 || c == 0 {
		c = r
	}
	return strconv.FormatFloat(c, 'f', -1, 64)
}

// creditsOf is an amount of credits with its noun: "1 credit", "10
// credits", "0.5 credits" (a budget of one credit was "1 credits").
func creditsOf(nanoAIU int64) string {
	if n := creditsText(nanoAIU); n != "1" {
		return n + " credits"
	}
	return "1 credit"
}

// periodText names a period: "30 days", "24 hours", "1 hour", "1h30m0s".
func periodText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d%day == 0 && d > day:
		return fmt.Sprintf("%d days", d/day)
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}
