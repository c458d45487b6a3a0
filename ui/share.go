package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/internal/qr"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/web"
)

// Devices manages the device tokens of the window's relay, for the
// "Connect a device…" dialog (docs/protocol.md, Devices and roles). The
// desktop implements it over the embedded relay, or over the data dir of
// the relay it attached to (another pilotdesk of this user on the same
// data dir); nil for a relay on another computer, whose tokens are made
// where it runs.
type Devices interface {
	// Share says how other devices reach the relay.
	Share() ShareInfo
	// CreateDevice makes a token (shown once: the relay keeps its hash).
	CreateDevice(ctx context.Context, name, role string, expires time.Time) (token string, err error)
	// Devices lists the devices, oldest first.
	Devices(ctx context.Context) ([]DeviceInfo, error)
	// RevokeDevice revokes a device's token; its connections close.
	RevokeDevice(ctx context.Context, name string) error
}

// ShareInfo is how other devices reach the relay.
type ShareInfo struct {
	// URL is the relay's ws:// or wss:// endpoint for devices.
	URL string
	// LAN is true when the relay listens on the network (with TLS);
	// otherwise only this computer reaches it, and the dialog shows no
	// QR code: a phone could not open it.
	LAN bool
	// SetupURL is the relay's setup page in plain http (http://HOST:PORT/),
	// which helps a phone trust the relay's local certificate authority
	// once and then opens the web client over https: the QR code opens it
	// with the token. "" when the relay has none.
	SetupURL string
	// CAFingerprint is the SHA-256 of that authority's certificate, in
	// AB:CD:… form, for those who want to check it ("" without one).
	CAFingerprint string
	// Unreachable, when set, says why no device on the network can reach
	// the relay although it listens there; the dialog says it instead of
	// showing a code.
	Unreachable string
}

// DeviceInfo is one device of the list.
type DeviceInfo struct {
	Name, Role                 string
	Created, Expires, LastUsed time.Time
	// Connected counts the device's connections open now (0 also when
	// the relay runs in another process, which the window cannot ask).
	Connected int
}

// devicesEvery is how often the open dialog reads the devices again, so
// that a phone that connects while it is open shows as connected.
const devicesEvery = 2 * time.Second

// expiries are the dialog's choices of a token's life.
var expiries = []struct {
	label string
	d     time.Duration
}{{"Never", 0}, {"1 hour", time.Hour}, {"1 day", 24 * time.Hour}, {"7 days", 7 * 24 * time.Hour}, {"30 days", 30 * 24 * time.Hour}}

// shareDialog is the "Connect a device…" dialog: how devices reach the
// relay, a form for a new device's token (name, role, expiry), the token
// made (as text, as a link, as a QR code) and the devices with Revoke.
type shareDialog struct {
	win     *Window
	devices Devices
	info    ShareInfo
	d       dialog.Dialog

	name    *escapeEntry
	role    *escapeSelect
	expiry  *escapeSelect
	problem *widget.Label
	result  *fyne.Container // the token made, with its link and QR code
	list    *fyne.Container // the devices
	// scroll holds the dialog's content; rowOf is each device's row of
	// list, by name, which a new token's device is scrolled to.
	scroll *container.Scroll
	rowOf  map[string]fyne.CanvasObject
	// rows are the device list's lines as last shown: refresh rebuilds
	// the list only when they change.
	rows []string
	// closed is set when the dialog closes, and stops following the
	// devices (followDevices).
	closed bool
	// reachable turns on "Reachable from my network" and restarts the
	// relay; nil when the relay is reachable already or cannot be
	// restarted from here.
	reachable *escapeButton
}

// ShowShare opens the "Connect a device…" dialog.
func (w *Window) ShowShare() { w.showShare() }

func (w *Window) showShare() *shareDialog {
	if w.opts.Devices == nil {
		dialog.ShowInformation("Connect a device",
			"This window is a client of a relay on another computer. Device tokens are kept where\n"+
				"the relay runs, so make them there: with its window's Connect a device…, or with\n"+
				"pilotdesk token create --name NAME --role controller", w.win)
		return nil
	}
	s := newShareDialog(w, w.opts.Devices)
	dlg := dialog.NewCustomWithoutButtons("Connect a device", s.content(), w.win)
	dlg.SetButtons([]fyne.CanvasObject{newEscapeButton("Close", nil, s.hide, s.hide)})
	s.d = dlg
	s.d.Resize(w.dialogSize(fyne.NewSize(860, 720)))
	s.d.SetOnClosed(func() {
		s.closed = true
		if w.share == s {
			w.share = nil
		}
	})
	w.share = s
	s.d.Show()
	s.followDevices()
	return s
}

// followDevices reads the devices again every devicesEvery while the
// dialog is open, on the UI goroutine: the relay announces no device's
// connection, so it is asked. A timer (Window.later), not a goroutine of
// its own: nothing outlives the dialog but one last tick that does nothing.
func (s *shareDialog) followDevices() {
	s.win.later(devicesEvery, func() {
		if s.closed {
			return
		}
		s.refresh()
		s.followDevices()
	})
}

func newShareDialog(w *Window, devs Devices) *shareDialog {
	s := &shareDialog{win: w, devices: devs, info: devs.Share()}
	s.name = newEscapeEntry(false, s.hide)
	s.name.SetPlaceHolder("Pixel, work laptop…")
	s.role = newEscapeSelect([]string{protocol.RoleController, protocol.RoleViewer}, nil, s.hide)
	s.role.SetSelected(protocol.RoleController)
	labels := make([]string, len(expiries))
	for i, e := range expiries {
		labels[i] = e.label
	}
	s.expiry = newEscapeSelect(labels, nil, s.hide)
	s.expiry.SetSelected(labels[0])
	s.problem = widget.NewLabel("")
	s.problem.Importance = widget.DangerImportance
	s.problem.Wrapping = fyne.TextWrapWord
	s.problem.Hide()
	s.result = container.NewVBox()
	s.list = container.NewVBox()
	return s
}

// hide closes the dialog (Close, and Escape in any of its widgets).
func (s *shareDialog) hide() { s.d.Hide() }

// reach says plainly who can reach the relay.
func (s *shareDialog) reach() string {
	switch {
	case s.info.Unreachable != "":
		return s.info.Unreachable
	case !s.info.LAN && s.reachable != nil:
		return "This relay listens on this computer only (127.0.0.1): a phone cannot open its address, so no code is shown. " +
			"Make it reachable from your network: it then serves https with a certificate of this computer's own " +
			"certificate authority, which a phone trusts once."
	case !s.info.LAN:
		return "This relay listens on this computer only (127.0.0.1): a phone cannot open its address, so no code is shown. " +
			"Turn on \"Reachable from my network\" in Settings to connect a phone or another computer."
	case s.info.SetupURL != "":
		return fmt.Sprintf("This relay is reachable from your network at %s. Scan the code with the phone's camera: "+
			"the first time, the page it opens helps the phone trust this computer's certificate authority (once per phone); "+
			"after that it opens pilotdesk at once.", httpsOf(s.info.URL))
	}
	return fmt.Sprintf("This relay is reachable from your network at %s.", httpsOf(s.info.URL))
}

// httpsOf is the web address of a wss:// relay URL.
func httpsOf(relayURL string) string {
	return strings.Replace(strings.TrimSuffix(relayURL, "/ws"), "wss://", "https://", 1)
}

func (s *shareDialog) content() fyne.CanvasObject {
	if !s.info.LAN && s.info.Unreachable == "" && s.win.opts.Restart != nil {
		s.reachable = newEscapeButton("Make reachable from my network", theme.ComputerIcon(), s.makeReachable, s.hide)
		s.reachable.Importance = widget.HighImportance
	}
	reach := widget.NewLabel(s.reach())
	reach.Wrapping = fyne.TextWrapWord
	if !s.info.LAN {
		reach.Importance = widget.WarningImportance
	}
	top := []fyne.CanvasObject{reach}
	if s.info.CAFingerprint != "" && s.info.Unreachable == "" {
		// Not needed to connect: for those who check what the phone
		// installs on a network they do not trust (docs/devices.md).
		check := widget.NewLabel("To check the certificate authority a phone installs, if you wish: SHA-256 " + s.info.CAFingerprint)
		check.Wrapping = fyne.TextWrapWord
		check.SizeName = theme.SizeNameCaptionText
		top = append(top, check)
	}
	if s.reachable != nil {
		top = append(top, container.NewHBox(s.reachable))
	}
	form := widget.NewForm(
		widget.NewFormItem("Device name", s.name),
		widget.NewFormItem("Role", s.role),
		widget.NewFormItem("Expires", s.expiry),
	)
	form.Items[1].HintText = "A controller may send, answer and stop; a viewer only follows"
	makeBtn := newEscapeButton("Make a token", theme.ContentAddIcon(), s.create, s.hide)
	if s.reachable == nil {
		makeBtn.Importance = widget.HighImportance
	}
	s.refresh()
	devicesTitle := widget.NewLabelWithStyle("Devices", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	// Padded, as the Settings dialog's body is: Fyne draws the scroll bar
	// over the content's right edge, where it covered the Revoke buttons
	// and the fields' ends.
	s.scroll = container.NewVScroll(container.NewPadded(container.NewVBox(append(top, form, container.NewHBox(makeBtn), s.problem, s.result,
		widget.NewSeparator(), devicesTitle, s.list)...)))
	return s.scroll
}

// makeReachable turns on "Reachable from my network" as the Settings
// dialog would (saved, then the relay restarted) and opens the dialog
// again on the relay that listens there; if it does not start, the
// previous setting is back and the dialog says why.
func (s *shareDialog) makeReachable() {
	prefs := s.win.app.Preferences()
	old := settings.Load(prefs, settings.Defaults())
	next := old
	next.LAN = true
	settings.Save(prefs, next)
	s.reachable.Disable()
	s.reachable.SetText("Restarting the relay on your network…")
	s.problem.Hide()
	s.win.quietRestart = true
	s.win.opts.Restart(func(err error) {
		// The window moved to the new relay (or back to the old one)
		// before this: a later restart, from Settings, says so again.
		s.win.quietRestart = false
		if err != nil {
			settings.Save(prefs, old)
			s.win.log.Warn("the relay was not made reachable", "err", err)
			s.reachable.SetText("Make reachable from my network")
			s.reachable.Enable()
			s.problem.SetText("The relay could not be made reachable from your network: " + err.Error() +
				". It runs as before, on this computer only.")
			s.problem.Show()
			return
		}
		if s.d != nil {
			s.d.Hide()
		}
		s.win.showShare()
	})
}

// create makes a token from the form and shows it.
func (s *shareDialog) create() {
	var expires time.Time
	for _, e := range expiries {
		if e.label == s.expiry.Selected && e.d > 0 {
			expires = s.win.now().Add(e.d)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	token, err := s.devices.CreateDevice(ctx, strings.TrimSpace(s.name.Text), s.role.Selected, expires)
	if err != nil {
		s.problem.SetText(err.Error())
		s.problem.Show()
		return
	}
	s.problem.Hide()
	name := strings.TrimSpace(s.name.Text)
	s.showToken(name, token)
	s.name.SetText("")
	s.refresh()
	s.reveal(s.rowOf[name])
}

// reveal scrolls the dialog so that row, a new token's device at the end
// of the list (below the token, its link and its code), shows at the
// bottom of the dialog, with as much of the token as fits above it; it
// was below the fold, and the device seemed not to be there.
func (s *shareDialog) reveal(row fyne.CanvasObject) {
	if row == nil || s.scroll == nil {
		return
	}
	// The list and the token grew: lay the content out now (the driver
	// would at the next frame) to know where the row is.
	s.scroll.Refresh()
	s.scroll.Content.Refresh()
	// The list's place in its box, the box's in the padding around it.
	bottom := theme.Padding() + s.list.Position().Y + row.Position().Y + row.Size().Height + theme.Padding()
	if view := s.scroll.Size().Height; bottom > s.scroll.Offset.Y+view {
		s.scroll.ScrollToOffset(fyne.NewPos(0, bottom-view))
	}
}

// showToken shows a new token as text and as the web client's link, and,
// when a phone can open it, a QR code: of the setup page that leads a
// phone to trust the relay once (SetupURL), else of the link. A relay on
// this computer only gets no code.
func (s *shareDialog) showToken(name, token string) {
	link := web.Link(s.info.URL, token)
	tokenText := widget.NewLabelWithStyle(token, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	tokenText.Selectable = true
	linkText := widget.NewLabelWithStyle(link, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	linkText.Selectable = true
	linkText.Wrapping = fyne.TextWrapBreak
	copyBtn := newEscapeButton("Copy link", theme.ContentCopyIcon(), func() {
		s.win.app.Clipboard().SetContent(link)
	}, s.hide)
	// codeLink is what the QR code opens, "" for none.
	scan, codeLink := "", link
	switch {
	case !s.info.LAN || s.info.Unreachable != "":
		codeLink = ""
	case s.info.SetupURL != "":
		scan, codeLink = "Scan the code with the phone, or open the link on a device that trusts this computer; ", web.SetupLink(s.info.SetupURL, token)
	default:
		scan = "Open the link on the device, or scan the code; "
	}
	where := "in a terminal"
	if codeLink == "" {
		where = "The link opens on this computer only; in a terminal here"
	}
	note := widget.NewLabel(fmt.Sprintf("The token of %q, shown only now. %s%s: pilotdesk chat --connect %s --token …",
		name, scan, where, s.info.URL))
	note.Wrapping = fyne.TextWrapWord
	text := container.NewVBox(note, widget.NewForm(widget.NewFormItem("Token", tokenText), widget.NewFormItem("Link", linkText)), container.NewHBox(copyBtn))
	var code fyne.CanvasObject
	if codeLink != "" {
		if img := qrImage(codeLink); img != nil {
			code = container.NewCenter(img)
		}
	}
	s.result.Objects = []fyne.CanvasObject{container.NewBorder(nil, nil, nil, code, text)}
	s.result.Refresh()
}

// qrImage is the link's QR code, or nil if it cannot be made.
func qrImage(link string) *canvas.Image {
	code, err := qr.Encode(link)
	if err != nil {
		return nil
	}
	const scale = 3
	img := canvas.NewImageFromImage(code.Image(scale))
	img.FillMode = canvas.ImageFillContain
	img.ScaleMode = canvas.ImageScalePixels
	side := float32((code.Size + 8) * scale)
	img.SetMinSize(fyne.NewSize(side, side))
	return img
}

// refresh reads the devices again.
func (s *shareDialog) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	devs, err := s.devices.Devices(ctx)
	var texts []string // a line of text for each row
	switch {
	case err != nil:
		texts = append(texts, "The devices could not be read: "+err.Error())
	case len(devs) == 0:
		texts = append(texts, "No device has a token yet.")
	}
	now := s.win.now()
	for _, d := range devs {
		texts = append(texts, deviceLine(d, now))
	}
	if s.rows != nil && slices.Equal(texts, s.rows) {
		return // unchanged: keep the widgets (and the focus)
	}
	s.rows = texts
	s.rowOf = make(map[string]fyne.CanvasObject, len(devs))
	var rows []fyne.CanvasObject
	if err != nil || len(devs) == 0 {
		// Wrapped: a reason may be long, and one line would widen the
		// dialog past the window.
		l := widget.NewLabel(texts[0])
		l.Wrapping = fyne.TextWrapWord
		rows = append(rows, l)
	}
	for i, d := range devs {
		name := d.Name
		revoke := newEscapeButton("Revoke", theme.DeleteIcon(), func() { s.revoke(name) }, s.hide)
		revoke.Importance = widget.DangerImportance
		row := container.NewBorder(nil, nil, nil, revoke, widget.NewLabel(texts[len(texts)-len(devs)+i]))
		s.rowOf[name] = row
		rows = append(rows, row)
	}
	s.list.Objects = rows
	s.list.Refresh()
}

func (s *shareDialog) revoke(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.devices.RevokeDevice(ctx, name); err != nil {
		s.problem.SetText(err.Error())
		s.problem.Show()
	}
	s.refresh()
}

// deviceLine is a device's line of the list: connected now, or when it
// was last used.
func deviceLine(d DeviceInfo, now time.Time) string {
	text := fmt.Sprintf("%s · %s · last used %s", d.Name, d.Role, ago(d.LastUsed, now))
	switch {
	case d.Connected == 1:
		text = fmt.Sprintf("%s · %s · connected now", d.Name, d.Role)
	case d.Connected > 1:
		text = fmt.Sprintf("%s · %s · connected now (%d connections)", d.Name, d.Role, d.Connected)
	}
	if !d.Expires.IsZero() {
		if now.Before(d.Expires) {
			text += " · expires " + d.Expires.Local().Format("2 Jan 15:04")
		} else {
			text += " · expired"
		}
	}
	return text
}

// ago says how long ago t was, in the words of every front end
// (conversation.Ago), or "never".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return conversation.Ago(t, now)
}
