// Package ui is pilotdesk's desktop window: the conversation list, the chat
// view with streamed markdown, the composer with the Plan/Act toggle, the
// plan banner, the waiting indicator, the non-dismissible input modal, the
// usage bar and the connection badge.
//
// It talks to the relay only through client.Client. The client's goroutine
// feeds a model (ui/model) and makes no Fyne calls; the window takes what
// changed at most once per frame with fyne.Do. It never imports
// fyne.io/fyne/v2/app: the caller owns the fyne.App.
package ui

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"runtime/debug"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// Options configures a Window.
type Options struct {
	// Remote is true when the client talks to a remote relay; the title
	// then names it. Otherwise the title says "embedded relay".
	Remote bool
	// RelayName, when set, is what the title says about the relay instead
	// (e.g. "embedded relay, script agent" or "relay.example.com:7420").
	RelayName string
	// Model is sent with every prompt ("" = the agent's default).
	Model string
	// FrameInterval is the longest a change waits before it is drawn
	// (default 16 ms, one frame at 60 Hz).
	FrameInterval time.Duration
	// StreamInterval is the least time between two frames while a reply
	// streams into view (default 125 ms): the deltas of that time are drawn
	// together, eight times a second, a few words at a time, which reads
	// as a steady stream. Fyne repaints the whole window for a frame, and
	// twice when a text with inline code, bold or a list changed (its
	// layout pass marks the window dirty again), so that is up to 16
	// repaints a second; drawing each delta as it came cost more than the
	// naive window (docs/performance.md). The first delta of a reply, and
	// any change after a quiet spell, still waits only FrameInterval.
	StreamInterval time.Duration
	// Devices manages the device tokens of the window's relay, for the
	// "Connect a device…" dialog (share.go); nil when the relay is not
	// this process's.
	Devices Devices
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger

	// Version is the app's version, for the About dialog.
	Version string
	// Agent names the embedded relay's agent backend ("copilot", "acp",
	// "script"); "" when the relay is remote. The About dialog shows it.
	Agent string
	// Script is the scenario file the embedded relay's scripted agent
	// (Agent "script") plays, "" for the built-in demo: the empty
	// conversation's hint names what runs.
	Script string
	// AgentLabel names that agent for people ("OpenCode (ACP)"), when its
	// backend knows (session.Labeler); the About dialog and the notice of
	// a restarted relay prefer it to Agent.
	AgentLabel string
	// DemoReason, when set, says why the embedded relay runs the built-in
	// demo although the Copilot CLI was wanted (auto found none that can
	// run). The window shows the first-run notice with it, until the user
	// dismisses it for good.
	DemoReason string
	// StartProblem, when set, says that the saved settings did not start
	// and what runs instead; the window shows it as a notice (markdown).
	StartProblem string
	// Effective are the settings in use: the preferences under what the
	// command line fixed. Locked names the fields the command line fixed
	// (field → "--model", "PILOTDESK_TOKEN"…): the Settings dialog shows
	// them read-only with their Effective value.
	Effective settings.Settings
	Locked    map[settings.Field]string
	// CheckFolder, set when the relay is this app's own, says whether
	// that relay accepts a folder as a workspace (its roots, resolved;
	// workspace.Set.Check). The window then sends the Settings' working
	// folder (Effective.WorkDir) as the workspace of each new
	// conversation's first prompt, so that changing it restarts nothing;
	// a folder the relay would refuse is applied by Restart instead,
	// whose relay takes it as its default folder. nil: the relay's
	// default folder is its own (a remote relay).
	CheckFolder func(path string) (dir string, err error)
	// OpenFolder, when set, opens a folder in the system's file manager
	// and says whether it could (File → Open folder, Ctrl+O); without it
	// the app's OpenURL does, which on Linux starts xdg-open and never
	// learns how it ended, so a failure went unsaid. It may take seconds:
	// the window calls it off the UI goroutine.
	OpenFolder func(dir string) error
	// CheckpointsOff, when set, says why the relay (this app's own)
	// records no checkpoints (no git): the window says it once, in a
	// notice (docs/checkpoints.md).
	CheckpointsOff string
	// Restart applies saved settings that need the relay restarted (or
	// reconnected): the caller stops the old relay, starts one from the
	// preferences now saved, and moves the window to it (SetClient). It
	// runs on the UI goroutine and must return at once; it calls done on
	// the UI goroutine, with nil once the new relay is in use, or with why
	// not after it has gone back to the previous one. nil: those settings
	// apply at the next start.
	Restart func(done func(err error))
	// OnShown, if set, is told on the UI goroutine of each conversation
	// the window opens (the app notes it for `pilotdesk chat`, which
	// attaches to the same conversation).
	OnShown func(conversationID string)
	// Reopen makes the window, once its first relay lists the
	// conversations, leave the new conversation it starts in for the one
	// it showed last (LastShown), or else the latest (reopen.go). The app
	// sets it, with LastShown from its data dir; only the first client
	// counts (SetClient keeps the conversation shown).
	Reopen    bool
	LastShown string
	// Connecting is what the empty window says while it has no client yet
	// (NewWindow with a nil client): the relay and its agent start behind
	// it. Default: "Connecting to the relay…".
	Connecting string
}

// Window is the pilotdesk window.
type Window struct {
	app fyne.App
	win fyne.Window
	// root is the window's content, built by build and set by NewWindow.
	root   *fyne.Container
	client *client.Client
	store  *store.Store
	opts   Options
	log    *slog.Logger
	// checkpointsSaid: the window said that checkpoints are off
	// (showCheckpointsOff), which it says once.
	checkpointsSaid bool
	// quietRestart: the next SetClient does not say that the relay
	// restarted. Connect a device's Make reachable restarts it and then
	// opens its dialog again saying where the relay is reachable now, so
	// a notice behind the dialog would only repeat it.
	quietRestart bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	outbox chan func(context.Context)

	// frames paces the redraws and runs the window's timers.
	frames frameScheduler
	// uiq holds work that the sender goroutine hands to the UI goroutine;
	// Sync runs it.
	uiq chan func()

	// Everything below belongs to the UI goroutine.
	current    string
	subscribed map[string]bool
	// givenBack holds, per conversation, a prompt the relay did not get
	// while another conversation was shown: it goes into the composer
	// when the user opens its conversation (actions.go, unsent).
	givenBack  map[string]string
	transcript *transcript
	sidebar    *sidebar
	status     *statusBar
	title      *widget.Label
	composer   *composerEntry
	sendBtn    *sendButton
	wait       *waitIndicator
	modal      *inputModal
	view       store.View
	noticeSlot *fyne.Container
	notice     *noticeCard
	chat       *fyne.Container // the conversation's pane: title, notice, transcript, composer
	// composerRow is the prompt box with its buttons, in bottomBox; an
	// open question hides it and takes questionSlot's room instead.
	composerRow  fyne.CanvasObject
	bottomBox    *fyne.Container
	questionSlot *canvas.Rectangle
	settings     *settingsDialog
	about        dialog.Dialog
	// Controllers that keep their own state, on the UI goroutine too:
	// mode is the Plan/Act toggle with the plan banner and the pick the
	// relay has not confirmed (toggle.go), budget the credit budget's
	// line and sayings (budget.go), notifier the desktop notifications
	// and the focus (notify.go), pager the conversation list's paging
	// (listpager.go).
	mode     *modeSwitch
	budget   *budgetGuard
	notifier *notifier
	pager    listPager

	lastConn client.StateChange
	// countdownScheduled is true while a redraw of the countdowns is
	// scheduled, a second after the last.
	countdownScheduled bool
	// replaying is true while the relay replays the current conversation
	// (opened for the first time, or reset): its rows are drawn once the
	// replay is over. replayStart is when it began, for the log line
	// that says how long a long one took (openedLog).
	replaying   bool
	replayStart time.Time
	replayID    string
	// shownUsage is the usage the window shows, to touch the status bar
	// only on change.
	shownUsage [2]string
	// role is the role of the window's token on the relay (the store's,
	// as last drawn): a viewer's window offers no Restore.
	role string
	// restoring is the open confirmation of a restore (changes.go), and
	// newConv the open new-conversation dialog (newconv.go).
	restoring *confirmation
	newConv   *newConvDialog
	// deleting is the open confirmation of a delete (delete.go);
	// shownID and shownOnRelay are the conversation shown at the last
	// frame and whether the relay knew it, which tell that it was deleted.
	deleting     *confirmation
	share        *shareDialog // the open Connect a device… (share.go)
	shownID      string
	shownOnRelay bool
	// menuOpened, if set, is told of each menu the keyboard opens, and
	// quitHook replaces the app's Quit (tests: the test driver draws no
	// menu, and its app cannot quit twice).
	menuOpened func(index int)
	quitHook   func()
	// menu is the window's menu (mainMenu), and openFolderItem its File →
	// Open folder, enabled when there is a folder to open; groupItem is
	// View → Group by folder, checked while the list is grouped.
	menu           *fyne.MainMenu
	openFolderItem *fyne.MenuItem
	groupItem      *fyne.MenuItem
	// reopenFrom is the new conversation the window started in while it
	// waits for the relay's first list to go back where the user was
	// (reopen.go); "" once done, or without Options.Reopen.
	reopenFrom string
	// deleteItem is File → Delete conversation…, enabled when the shown
	// conversation may be deleted (showDeleteItem).
	deleteItem *fyne.MenuItem
}

// NewWindow builds the window on a and starts following c's events. Show it
// with Window().Show() or ShowAndRun(). The caller keeps ownership of c and
// closes it after the window is gone.
//
// c may be nil: the window then shows at once that it connects
// (Options.Connecting) and sends nothing, and keeps what is typed, until
// SetClient gives it a client, or StartFailed says that none will come. A
// window shown before its relay has started costs the user no wait.
func NewWindow(a fyne.App, c *client.Client, opts Options) *Window {
	opts = withDefaults(opts)
	useAppTheme(a)
	w := &Window{
		app:    a,
		opts:   opts,
		log:    opts.Logger,
		outbox: make(chan func(context.Context), 256),
		uiq:    make(chan func(), 64),
	}
	w.notifier = newNotifier(a, w.conversationTitle)
	w.pager.ask = w.listPage
	w.frames.draw = w.frame
	w.follow(c)
	faces := warmFaces(firstFrameStyles)
	w.win = a.NewWindow(windowTitle(opts, w.clientURL()))
	faces.Wait()
	w.build()
	w.win.Resize(w.savedSize())
	w.win.SetOnClosed(func() {
		w.saveSize()
		w.Close()
	})
	a.Lifecycle().SetOnEnteredForeground(w.focusGained)
	a.Lifecycle().SetOnExitedForeground(w.focusLost)

	w.newConversation()
	if c == nil {
		w.transcript.hint.SetText(w.opts.Connecting)
		w.refreshSend()
	} else {
		w.showStartNotices()
		w.startReopen()
	}
	// The widgets become the window's content once they hold their first
	// text: Fyne measures and lays out a tree when it becomes content, and
	// measures a label again, with its truncation, each time its text
	// changes after that (a third of building the window, before). Focus
	// needs the content.
	w.win.SetContent(w.root)
	w.focusComposer()
	if c != nil {
		w.start()
	}
	return w
}

// focusComposer gives the composer the keyboard focus. While NewWindow
// builds the window, its widgets are not yet the window's content and
// there is nothing to focus (Fyne would log an error): NewWindow focuses
// the composer once they are.
func (w *Window) focusComposer() {
	if w.win.Content() != w.root {
		return
	}
	w.win.Canvas().Focus(w.composer)
}

// clientURL is the relay's URL, "" without a client.
func (w *Window) clientURL() string {
	if w.client == nil {
		return ""
	}
	return w.client.URL()
}

// StartFailed says that no relay could start (why), in place of the
// window's greeting and in a notice that offers Settings: saved settings
// may be what fails, and applying new ones starts a relay (SetClient). It
// runs on the UI goroutine, on a window that has no client.
func (w *Window) StartFailed(why string) {
	w.store.Apply(client.Event{Data: &client.StateChange{State: client.StateClosed, Err: errors.New(why)}})
	w.transcript.hint.SetText("No relay is running: the notice above says why.")
	w.showNotice(newNoticeCard(startNoticeID, theme.ErrorIcon(), "pilotdesk could not start", why+
		"\n\nIf your saved settings are the cause, fix them in Settings and apply them; otherwise change the command line and start pilotdesk again.",
		noticeAction{label: "Open Settings", icon: theme.SettingsIcon(), important: true, do: w.ShowSettings},
	))
	w.sync(true)
}

// SetClient moves the window to c, the client of another relay, with opts:
// applying settings restarted the embedded relay or picked another relay.
// The window stays as it is (its widgets, the draft in the composer, an
// open dialog) and keeps the conversation it shows, which it replays from
// c's relay: an embedded relay restarted on the same data dir has its
// history. What the window knew of the old relay goes: its conversation
// list, and an open question (its turn stopped with the relay). The window
// says that the relay changed. It runs on the UI goroutine; the caller
// then closes the old client.
func (w *Window) SetClient(c *client.Client, opts Options) {
	// The first client of a window built without one: the window greets
	// as NewWindow does and keeps the conversation it shows (new, maybe
	// with a draft typed meanwhile).
	first := w.client == nil
	// The goroutines that follow the old client read what changes below.
	w.Close()
	w.Wait()
	// Requests still queued were for the old relay.
drain:
	for {
		select {
		case <-w.outbox:
		default:
			break drain
		}
	}
	wasRemote, onRelay := w.opts.Remote, w.store.OnRelay(w.current)
	if w.modal != nil {
		w.modal.hide()
		w.modal = nil
	}
	if w.about != nil {
		w.about.Hide() // it names the old relay
	}
	w.opts = withDefaults(opts)
	if w.opts.OnShown != nil && w.current != "" {
		w.opts.OnShown(w.current)
	}
	w.log = w.opts.Logger
	w.mode.forget()
	w.follow(c)
	// What the old context scheduled will not run: schedule anew.
	w.countdownScheduled = false
	w.wait.restart()
	w.composer.blinkCheck = false
	w.composer.awake()
	w.win.SetTitle(windowTitle(w.opts, c.URL()))
	w.transcript.hint.SetText(emptyHint(w.opts))
	w.store.Create(w.current)
	if onRelay {
		w.subscribe(w.current)
	}
	if first {
		if w.notice != nil && w.notice.id == startNoticeID {
			w.dismissNotice(startNoticeID) // StartFailed's, if any
		}
		w.showStartNotices()
		w.startReopen()
	} else if w.quietRestart {
		w.quietRestart = false
	} else {
		w.showRelayChanged(wasRemote)
	}
	w.start()
	w.sync(true)
}

// withDefaults fills the options left zero.
func withDefaults(opts Options) Options {
	if opts.FrameInterval <= 0 {
		opts.FrameInterval = 16 * time.Millisecond
	}
	if opts.StreamInterval <= 0 {
		opts.StreamInterval = 125 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Connecting == "" {
		opts.Connecting = "Connecting to the relay…"
	}
	return opts
}

// follow makes c the window's client, with a store of its own: what the
// window knew of another relay's conversations does not hold on c's. The
// window's goroutines must not be running.
func (w *Window) follow(c *client.Client) {
	w.client = c
	// The window counts down to the relay's expiresAt only; its own
	// answers are those of its token's device in a window, as its client
	// learns it, and as it learnt it on an earlier run (identity.go).
	self := protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientWindow}
	var id *client.Identity // nil until the window has a client (NewWindow)
	if c != nil {
		id = c.Identity()
		rememberIdentity(w.app.Preferences(), id)
	}
	w.store = store.NewStore(store.Options{
		Options:  conversation.Options{Self: self, Identity: id, Now: w.opts.Now, Logger: w.opts.Logger},
		OnChange: w.requestFrame, FullRows: windowRows,
	})
	w.subscribed = map[string]bool{}
	w.givenBack = map[string]string{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.frames.restart(w.ctx, w.opts.FrameInterval, w.opts.StreamInterval)
}

func windowTitle(opts Options, relayURL string) string {
	if opts.RelayName != "" {
		return "pilotdesk — " + opts.RelayName
	}
	if !opts.Remote {
		return "pilotdesk — embedded relay"
	}
	host := relayURL
	if u, err := url.Parse(relayURL); err == nil && u.Host != "" {
		host = u.Scheme + "://" + u.Host
	}
	return "pilotdesk — remote relay " + host
}

// Window returns the fyne window.
func (w *Window) Window() fyne.Window { return w.win }

// ShowAndRun shows the window and runs the app until it quits.
func (w *Window) ShowAndRun() { w.win.ShowAndRun() }

// Close stops the window's goroutines (the window's own close calls it).
// The client's event goroutine stops when the client is closed.
func (w *Window) Close() {
	w.cancel()
}

// Wait waits until every goroutine of the window has stopped: call it after
// Close and after closing the client.
func (w *Window) Wait() { w.wg.Wait() }

func (w *Window) now() time.Time { return w.opts.Now() }

// sync draws everything that changed since the last frame (everything when
// full). It runs on the UI goroutine: fyne.Do calls it once per frame.
func (w *Window) sync(full bool) {
drain:
	for {
		select {
		case f := <-w.uiq:
			f()
		default:
			break drain
		}
	}
	if w.replaying && w.store.Synced(w.current) {
		full = true // the replay is over: draw the whole history once
	}
	f := w.store.Take(w.current, full)
	now := w.now()

	if f.ConnChanged || full {
		if f.Conn.State == client.StateLive && w.lastConn.State != client.StateLive && w.lastConn.State != client.StateConnecting {
			w.refreshList() // back after a drop: conversations may have come and gone
		}
		w.status.setConn(f.Conn, now)
		w.status.setNotice(f.Notice)
		w.lastConn = f.Conn
		w.budget.show(f.Budget, now)
		w.refreshSend()
		if f.Role != w.role {
			w.role = f.Role
			defer w.transcript.remeasure() // the cards' and notices' buttons
		}
	}
	if f.SidebarChanged {
		w.sidebar.more = f.More
		w.sidebar.set(f.Sidebar, w.current)
		w.compactFirstRunOnHistory(f.Sidebar)
	} else if w.sidebar.waiting() {
		w.sidebar.list.Refresh() // the countdowns
	}

	v := f.Conv
	w.view = v
	if w.deletedShown(v) {
		// Deleted (here or by another device): a new conversation takes
		// its place, as Ctrl+N would, once this frame is drawn.
		defer w.newConversation()
	}
	// While the relay replays a conversation being opened (its history,
	// from seq 0), rows are not drawn as they arrive: that measured every
	// row of a long history, frame after frame (17 s for 5,000 messages,
	// docs/performance.md). The transcript says that it loads, and the
	// frame after copilot:subscribed draws the history once, measuring
	// only the rows near the bottom.
	replaying := v.Exists && v.OnRelay && !v.Synced && w.subscribed[v.ID]
	if replaying != w.replaying {
		w.replaying = replaying
		if replaying {
			w.replayStart, w.replayID = time.Now(), v.ID
			w.transcript.hint.SetText("Loading the conversation…")
			w.transcript.apply(store.View{ID: v.ID, Full: true})
		} else {
			w.transcript.hint.SetText(emptyHint(w.opts))
		}
	}
	if !replaying && (v.Full || len(v.Changed) > 0) {
		w.transcript.apply(v)
	}
	if !replaying && !w.replayStart.IsZero() {
		w.replayEnded(v)
	}

	title := conversation.EntryTitle(v.Title)
	if !v.Exists {
		title = conversation.EntryTitle("")
	}
	if w.title.Text != title {
		w.title.SetText(title)
	}
	if w.newConv != nil && f.ConnChanged {
		w.newConv.setWorkspaces(w.store.Workspaces())
	}
	w.showAgent(v.Agent, v.Folder) // agentname.go
	w.showOpenFolder()
	w.showDeleteItem()

	w.mode.show(w.current, v.Mode)
	w.showStreaming(v.Streaming)
	w.wait.show(v, now)
	w.showModal(v, now)
	if line, totals := conversation.UsageText(v.Usage, v.Turn, now), conversation.TotalsText(v.Usage); line != w.shownUsage[0] || totals != w.shownUsage[1] {
		w.shownUsage = [2]string{line, totals}
		w.status.setUsage(line, totals, v.Usage.Empty())
	}

	// A countdown shows (the question's time left in the modal, the
	// indicator, the list): draw it again in a second. Nothing else is
	// redrawn on a timer, so an idle window does not wake.
	if (v.Pending != nil || w.sidebar.waiting()) && !w.countdownScheduled {
		w.countdownScheduled = true
		w.later(time.Second, func() {
			w.countdownScheduled = false
			w.sync(false)
		})
	}
	// Frames keep their pace while a reply streams into view (after its
	// first delta, which is drawn at once) or another conversation streams.
	paced := (v.Streaming && !v.Thinking) || w.sidebar.streamingOther(w.current)
	w.frames.pace(paced)
	if v.Streaming && !v.Thinking {
		// The reply's frames are drawn anyway: a blink on top of them
		// would be as many frames again. The cursor stays solid while the
		// reply streams (a key starts the blink again, for blinkTimeout).
		w.composer.stopBlink()
	}
}

// longReplay is the number of rows from which a replayed conversation is
// a long one: its garbage is returned to the system and its time logged.
const longReplay = 1000

// replayEnded runs in the frame that draws a replayed conversation (the
// replay is over and the transcript has its rows; Fyne paints them right
// after this frame's sync).
func (w *Window) replayEnded(v store.View) {
	took := time.Since(w.replayStart)
	w.replayStart = time.Time{}
	if !v.Exists || v.ID != w.replayID || v.NumRows <= longReplay {
		return
	}
	// What the replay allocated (the events, decoded and folded) goes
	// back to the system now, not over minutes: 20 MiB of RSS for 5,000
	// messages.
	time.AfterFunc(time.Second, debug.FreeOSMemory)
	// Said once per long open, with the wall clock in microseconds:
	// tools/winbench times the open from its click to the first frame
	// the window draws after this line (docs/performance.md), which a
	// loaded machine's CPU samples could not tell apart from the rest.
	w.log.Info("conversation loaded", "conversation", v.ID, "rows", v.NumRows,
		"took", took.Round(time.Millisecond), "shownAtMicros", time.Now().UnixMicro())
}

// shownMode is the mode the toggle shows for the current conversation:
// the mode its next prompt goes in.
func (w *Window) shownMode() protocol.Mode { return w.mode.shown(w.view.Mode) }

// showStreaming turns Send into Stop while a turn runs.
func (w *Window) showStreaming(streaming bool) {
	if w.sendBtn.show(streaming) {
		w.refreshSend()
	}
}

// refreshSend enables Send unless the credit budget is spent (Stop always
// works).
func (w *Window) refreshSend() {
	if w.client == nil || w.budget.spent() && !w.view.Streaming {
		w.sendBtn.Disable()
	} else {
		w.sendBtn.Enable()
	}
}

// showModal opens, updates or closes the input modal to match the model.
func (w *Window) showModal(v store.View, now time.Time) {
	p := v.Pending
	if p == nil || p.Answering {
		if w.modal != nil {
			w.modal.hide()
			w.modal = nil
			w.focusComposer()
		}
		return
	}
	if w.modal != nil && (w.modal.req.RequestID != p.Request.RequestID || w.modal.convID != v.ID) {
		w.modal.hide()
		w.modal = nil
	}
	if w.modal == nil {
		w.modal = newInputModal(w, v.ID, *p)
		w.modal.show()
	} else {
		w.modal.refused(p.Hint)
	}
	w.modal.update(*p, now)
}
