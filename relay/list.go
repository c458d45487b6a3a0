package relay

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// copilot:list is paged (docs/protocol.md, Listing and watching): a page
// holds at most protocol.MaxListLimit entries, most recently updated first,
// and never makes a frame over the limit; nextCursor names the last entry
// given, so the next page starts after it whatever changed meanwhile. A
// connection may also watch the list: it then gets copilot:conversation
// whenever an entry changes in a way the list shows.

// listEntryLocked is the conversation's entry in the list, as it stands
// after the last event sent (what copilot:subscribed says too), and whether
// it is listed at all: a conversation is listed once an event of it was
// sent, until it is deleted.
func (c *conversation) listEntryLocked() (protocol.ConversationInfo, bool) {
	if c.deleted.Load() || c.deleting != nil || c.sentSeq == 0 {
		return protocol.ConversationInfo{ConversationID: c.id}, false
	}
	return protocol.ConversationInfo{
		ConversationID: c.id,
		Title:          c.sent.title,
		CreatedAt:      listTime(c.createdAt),
		UpdatedAt:      listTime(c.updatedAt),
		Streaming:      c.sent.streaming,
		Mode:           c.sent.mode,
		WaitingInput:   c.sent.pending != nil,
		Agent:          c.sent.agent, // the agent of the latest turn, not the relay's now
		Workspace:      protocolWorkspace(c.sent.workspace),
	}, true
}

func listTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// listKey is where an entry sorts: most recently updated first, then by id.
type listKey struct {
	updated int64 // Unix nanoseconds
	id      string
}

func (a listKey) compare(b listKey) int {
	return cmp.Or(cmp.Compare(b.updated, a.updated), strings.Compare(a.id, b.id))
}

// The cursor is the key of the last entry of a page, so that the next page
// starts after it: an entry that moves up meanwhile (updated) is not listed
// twice, and one that does not move is listed once. It is opaque to
// clients: "v1:<nanoseconds>:<id>" in unpadded URL-safe base64.
func (k listKey) cursor() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "v1:%d:%s", k.updated, k.id))
}

func parseCursor(s string) (listKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return listKey{}, false
	}
	rest, ok := strings.CutPrefix(string(b), "v1:")
	if !ok {
		return listKey{}, false
	}
	num, id, ok := strings.Cut(rest, ":")
	if !ok || id == "" || len(id) > protocol.MaxIDLength {
		return listKey{}, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return listKey{}, false
	}
	return listKey{n, id}, true
}

// list handles copilot:list: watch, when given, turns the notices on or
// off; the answer is one page. A bad cursor gets invalid_field and changes
// nothing.
func (r *Relay) list(c *conn, d *protocol.List) {
	var after *listKey
	if d.Cursor != "" {
		k, ok := parseCursor(d.Cursor)
		if !ok {
			c.sendError(&protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeList,
				Message: "copilot:list: data.cursor is not a cursor this relay gave: send the nextCursor of a copilot:conversations, or none for the first page"})
			return
		}
		after = &k
	}
	if d.Watch != nil {
		r.watch.set(c, *d.Watch)
	}
	// Only a token with less than the owner's rights is told its role: an
	// owner's page stays as it always was.
	role := c.id.role
	if role == protocol.RoleOwner {
		role = ""
	}
	if frame := r.listPage(after, d.PageSize(), role); frame != nil {
		c.enqueue(frame)
	}
}

// listPage is the copilot:conversations frame of up to limit entries after
// the key after (nil: from the start), for a connection of role.
func (r *Relay) listPage(after *listKey, limit int, role string) []byte {
	convs := r.allConversations()
	type entry struct {
		key  listKey
		info protocol.ConversationInfo
	}
	entries := make([]entry, 0, min(len(convs), 4*limit))
	for _, c := range convs {
		c.mu.Lock()
		info, listed := c.listEntryLocked()
		key := listKey{c.updatedAt.UnixNano(), c.id}
		c.mu.Unlock()
		if listed && (after == nil || key.compare(*after) > 0) {
			entries = append(entries, entry{key, info})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.key.compare(b.key) })
	for n := min(limit, len(entries)); ; n /= 2 {
		page := &protocol.Conversations{Conversations: make([]protocol.ConversationInfo, n), Role: role}
		for i, e := range entries[:n] {
			page.Conversations[i] = e.info
		}
		if n < len(entries) && n > 0 {
			page.NextCursor = entries[n-1].key.cursor()
		}
		frame, err := protocol.Encode(protocol.TypeConversations, page)
		if err != nil {
			r.log.Error("relay: encode copilot:conversations", "err", err)
			return nil
		}
		// An entry is at most a few hundred bytes (ids and titles are
		// short), so a full page is far below the limit; were it not, the
		// page is cut and nextCursor gives the rest.
		if len(frame) <= protocol.MaxFrameBytes || n <= 1 {
			return frame
		}
	}
}

// watchDelay is how long changes gather before the notices go out: a
// watcher hears of a change within about this long (under 100 ms), and a
// conversation that changes many times meanwhile gets one notice.
const watchDelay = 40 * time.Millisecond

// watchHub sends copilot:conversation notices to the connections that
// watch the list. Conversations report changes of their entry with
// noteLocked; the notices go out on a timer, one per conversation that
// changed, with its entry as it is then.
type watchHub struct {
	r *Relay

	mu      sync.Mutex // guards conns, changed, timer, closed; a leaf lock (taken under a conversation's)
	conns   map[*conn]struct{}
	changed map[string]*conversation // by id: the conversation of that id that changed last
	timer   *time.Timer              // armed while changes wait
	closed  bool
	flushes sync.WaitGroup // an armed timer, until its flush has returned
}

func newWatchHub(r *Relay) *watchHub {
	return &watchHub{r: r, conns: map[*conn]struct{}{}, changed: map[string]*conversation{}}
}

// set turns the notices on or off for a connection.
func (h *watchHub) set(c *conn, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on && !h.closed {
		h.conns[c] = struct{}{}
	} else {
		delete(h.conns, c)
	}
}

// noteLocked records that conv's list entry changed; conv's lock is held.
// Without watchers nothing is kept: a connection that starts watching gets
// the list as it is then.
func (h *watchHub) noteLocked(conv *conversation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conns) == 0 || h.closed {
		return
	}
	h.changed[conv.id] = conv
	if h.timer == nil {
		h.flushes.Add(1)
		h.timer = time.AfterFunc(watchDelay, h.flush)
	}
}

// flush sends a notice for each conversation that changed to every watcher.
func (h *watchHub) flush() {
	defer h.flushes.Done()
	h.mu.Lock()
	changed := h.changed
	h.changed = map[string]*conversation{}
	h.timer = nil
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	if len(conns) == 0 {
		return
	}
	frames := make([][]byte, 0, len(changed))
	for _, conv := range changed {
		conv.mu.Lock()
		if conv.deleting != nil && !conv.deleted.Load() {
			// Being deleted: the delete notes it again when it is done,
			// and a delete that fails leaves the entry as it was.
			conv.mu.Unlock()
			continue
		}
		info, listed := conv.listEntryLocked()
		conv.mu.Unlock()
		d := protocol.ConversationChanged{ConversationInfo: info, Deleted: !listed}
		if !listed {
			d.ConversationInfo = protocol.ConversationInfo{ConversationID: conv.id}
		}
		frame, err := protocol.Encode(protocol.TypeConversation, &d)
		if err != nil {
			h.r.log.Error("relay: encode copilot:conversation", "err", err)
			continue
		}
		frames = append(frames, frame)
	}
	for _, c := range conns {
		c.enqueueMany(frames)
	}
}

// close stops the notices and waits for a flush under way.
func (h *watchHub) close() {
	h.mu.Lock()
	h.closed = true
	clear(h.conns)
	if h.timer != nil && h.timer.Stop() {
		h.flushes.Done()
	}
	h.timer = nil
	h.mu.Unlock()
	h.flushes.Wait()
}
