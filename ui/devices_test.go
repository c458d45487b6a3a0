package ui

import (
	"context"
	"errors"
	"image"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// The countdown is the relay's: the window's clock is a day behind the
// relay's (the harness's frozen clock), and the window has no timeout of
// its own, yet the modal counts down the relay's two minutes, and follows
// the window's clock from there.
func TestCountdownFollowsTheRelay(t *testing.T) {
	h := newHarness(t, harnessConfig{relay: relay.Config{InputTimeout: 2 * time.Minute}, fakeClock: true})
	if skew := time.Since(h.w.now()); skew < time.Hour {
		t.Fatalf("the test needs the window's clock far from the relay's (%s apart)", skew)
	}
	h.send("approve the migration")
	m := h.waitModal(kindApproval)
	if !strings.HasPrefix(m.countdown.Text, "Times out in 2:00;") || !strings.Contains(h.w.wait.label.Text, "2:00 left") {
		t.Fatalf("countdown %q, indicator %q", m.countdown.Text, h.w.wait.label.Text)
	}
	h.clock.advance(45 * time.Second)
	h.frame()
	if !strings.HasPrefix(m.countdown.Text, "Times out in 1:15;") {
		t.Fatalf("after 45 s: %q", m.countdown.Text)
	}
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
}

// Who answered: another device's answer is named in the transcript; the
// window's own answer is "You answered", also for a window that starts
// anew on the same relay and replays it (the device is compared, not the
// window's memory).
func TestAnsweredFromAnotherDevice(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	token, _, err := h.srv.Relay.CreateDevice(t.Context(), relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	phone := relaytest.Dial(t, h.srv.URL+"?client=web", token)
	h.send("approve the migration")
	h.waitModal(kindApproval)
	phone.Send(protocol.TypeSubscribe, map[string]any{"conversationId": h.w.current})
	req := phone.WaitFor(protocol.TypeSubscribed, nil)
	var sub protocol.Subscribed
	req.Decode(t, &sub)
	phone.Send(protocol.TypeUserInputResponse, map[string]any{"conversationId": h.w.current, "requestId": sub.PendingInput.RequestID, "answer": "approve"})
	h.waitFor("the modal to close", func() bool { return !h.modalOpen() })
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.dump(), `"Run the migration?" was answered from Pixel (web).`) {
		t.Fatalf("transcript:\n%s", h.dump())
	}
}

// relayDevices is the desktop's Devices over the test's relay.
type relayDevices struct {
	r    *relay.Relay
	info ShareInfo
}

func (d relayDevices) Share() ShareInfo { return d.info }

func (d relayDevices) CreateDevice(ctx context.Context, name, role string, expires time.Time) (string, error) {
	token, _, err := d.r.CreateDevice(ctx, relay.NewDevice{Name: name, Role: role, Expires: expires})
	return token, err
}

func (d relayDevices) Devices(ctx context.Context) ([]DeviceInfo, error) {
	devs, err := d.r.Devices(ctx)
	out := make([]DeviceInfo, len(devs))
	for i, dev := range devs {
		out[i] = DeviceInfo{Name: dev.Name, Role: dev.Role, Created: dev.CreatedAt, Expires: dev.ExpiresAt, LastUsed: dev.LastUsed,
			Connected: d.r.ConnectedDevices()[dev.Name]}
	}
	return out, err
}

func (d relayDevices) RevokeDevice(ctx context.Context, name string) error {
	return d.r.RevokeDevice(ctx, name)
}

// The "Connect a device…" dialog: it says who can reach the relay, makes a
// token (controller by default) shown as text, link and QR code, which
// works on the relay, lists the device, and Revoke closes its connection.
// The code opens the relay's setup page with the token, which leads a
// phone to trust the relay's local certificate authority once: no
// fingerprint to read.
func TestShareDialog(t *testing.T) {
	th := FixedVariant(theme.DefaultTheme(), theme.VariantLight)
	h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 760)})
	devs := relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/",
		CAFingerprint: "3F:A9:0C:51:7E:22:B8:04:9D:6A:11:C3:E5:70:2B:8F:44:D1:96:0E:A7:5C:39:F2:08:BB:6D:13:E4:81:C0:5A"}}
	h.w.opts.Devices = devs
	d := h.w.showShare()
	h.frame()
	if !strings.Contains(d.reach(), "reachable from your network at https://192.168.1.20:7421.") || !strings.Contains(d.reach(), "trust this computer's certificate authority") ||
		strings.Contains(d.reach(), "SHA-256") {
		t.Fatalf("reach: %s", d.reach())
	}
	if d.reachable != nil {
		t.Fatal("a relay reachable already is offered to be made reachable")
	}
	if top := h.w.Window().Canvas().Overlays().Top(); !strings.Contains(allText(top), "if you wish: SHA-256 3F:A9:0C") {
		t.Fatal("the dialog does not show the CA's fingerprint for those who check it")
	}
	if d.role.Selected != protocol.RoleController {
		t.Fatalf("default role %q", d.role.Selected)
	}
	d.name.SetText("Pixel")
	d.expiry.SetSelected("7 days")
	d.create()
	h.frame()
	if d.problem.Visible() || len(d.result.Objects) != 1 {
		t.Fatalf("after Make a token: problem %q, %d result objects", d.problem.Text, len(d.result.Objects))
	}
	shown := d.result.Objects[0].(*fyne.Container) // the text, and the code at the right
	form := shown.Objects[0].(*fyne.Container).Objects[1].(*widget.Form)
	token, link := form.Items[0].Widget.(*widget.Label).Text, form.Items[1].Widget.(*widget.Label).Text
	if !strings.HasPrefix(token, "pdt_") || link != "https://192.168.1.20:7421/#token="+token {
		t.Fatalf("token %q, link %q", token, link)
	}
	codes := qrCodes(d.result)
	if len(codes) != 1 {
		t.Fatalf("%d QR codes", len(codes))
	}
	if want := qrImage("http://192.168.1.20:7421/#token=" + token); !sameImage(codes[0].Image, want.Image) {
		t.Fatal("the QR code is not the setup page's link with the token")
	}
	if len(d.list.Objects) != 1 || !strings.Contains(listText(d.list.Objects[0]), "Pixel · controller · last used never · expires") {
		t.Fatalf("devices %q", listText(d.list.Objects[0]))
	}
	(&shooter{t: t, variant: "light"}).shot(h, "share")

	// The token works on the relay, as a controller.
	phone := relaytest.Dial(t, h.srv.URL+"?client=web", token)
	phone.Send(protocol.TypePing, nil)
	phone.Expect(protocol.TypePong)
	// Revoke: the device's connection closes, the list is empty.
	d.revoke("Pixel")
	if code, _ := phone.WaitClosed(); code != relay.CloseRevoked {
		t.Fatalf("closed with %d", code)
	}
	if len(d.list.Objects) != 1 || !strings.Contains(listText(d.list.Objects[0]), "No device") {
		t.Fatalf("after Revoke: %q", listText(d.list.Objects[0]))
	}
	// A name taken is said in the dialog.
	d.name.SetText("Tab")
	d.create()
	d.name.SetText("Tab")
	d.create()
	if !d.problem.Visible() || !strings.Contains(d.problem.Text, "exists already") {
		t.Fatalf("problem %q", d.problem.Text)
	}
}

// The dialog fits the window: in the default 720 px high window (and the
// smallest) the window shows around it, and what does not fit scrolls
// inside it (it was 860x720 whatever the window, filling a 720 px one).
func TestShareDialogFitsTheWindow(t *testing.T) {
	th := FixedVariant(theme.DefaultTheme(), theme.VariantLight)
	for _, size := range []fyne.Size{defaultWindowSize, minWindowSize} {
		h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: size})
		h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/"}}
		d := h.w.showShare()
		h.frame()
		if size == defaultWindowSize {
			// Before a token: the token and its code change every run.
			(&shooter{t: t, variant: "light"}).shot(h, "share-fits")
		}
		d.name.SetText("Pixel")
		d.create()
		h.frame()
		// The driver lays out again what grew, each frame; the test
		// canvas needs telling.
		h.w.Window().Canvas().Overlays().Top().Refresh()
		pop, ok := h.w.Window().Canvas().Overlays().Top().(*widget.PopUp)
		if !ok {
			t.Fatalf("%v: the dialog is not the top overlay", size)
		}
		canvasSize := h.w.Window().Canvas().Size()
		got := pop.Content.Size()
		if got.Width > canvasSize.Width-dialogMargin || got.Height > canvasSize.Height-dialogMargin {
			t.Errorf("%v: the dialog is %v in a %v window: it leaves no window around it", size, got, canvasSize)
		}
		var scroll *container.Scroll
		uitest.Walk(pop.Content, func(o fyne.CanvasObject) bool {
			// The dialog's own, not an entry's.
			if sc, ok := o.(*container.Scroll); ok && (scroll == nil || sc.Size().Height > scroll.Size().Height) {
				scroll = sc
			}
			return true
		})
		if scroll == nil || scroll.Content.Size().Height < scroll.Content.MinSize().Height {
			t.Fatalf("%v: the dialog's content is cut, not scrolled", size)
		}
		if size == minWindowSize && scroll.Content.Size().Height <= scroll.Size().Height {
			t.Fatalf("%v: the token and the devices do not scroll inside the dialog", size)
		}
	}
}

// The open dialog's device list follows the devices: a phone that
// connects while it is open shows as connected now, with no reopening
// (it said "last used never" until then), and as last used once it
// leaves; rows that did not change are kept, not made again.
func TestShareDialogDevicesLive(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/"}}
	d := h.w.showShare()
	h.frame()
	d.name.SetText("Pixel")
	d.create()
	h.frame()
	form := d.result.Objects[0].(*fyne.Container).Objects[0].(*fyne.Container).Objects[1].(*widget.Form)
	token := form.Items[0].Widget.(*widget.Label).Text
	row := func() string { return listText(d.list.Objects[0]) }
	if !strings.Contains(row(), "Pixel · controller · last used never") {
		t.Fatalf("before the phone: %q", row())
	}
	kept := d.list.Objects[0]
	d.refresh()
	if d.list.Objects[0] != kept {
		t.Fatal("an unchanged list was made again")
	}
	phone := relaytest.Dial(t, h.srv.URL+"?client=web", token)
	phone.Send(protocol.TypePing, nil)
	phone.Expect(protocol.TypePong)
	h.waitFor("the list to say the phone is connected", func() bool { return strings.Contains(row(), "Pixel · controller · connected now") })
	phone.Close()
	h.waitFor("the list to say the phone was used", func() bool { return strings.Contains(row(), "Pixel · controller · last used just now") })
	d.d.Hide()
	if !d.closed {
		t.Fatal("the closed dialog still follows the devices")
	}
}

// A relay on the loopback: the dialog shows no QR code (no phone could
// open 127.0.0.1) and says why; its button turns "Reachable from my
// network" on and restarts the relay, and the dialog opens again on the
// relay the network reaches, whose token gets a code, with no notice
// behind it that the relay restarted. A restart that fails puts the
// setting back and says why.
func TestShareDialogOnLoopback(t *testing.T) {
	th := FixedVariant(theme.DefaultTheme(), theme.VariantLight)
	h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 760)})
	h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "ws://127.0.0.1:7420/ws"}}
	restartErr := errors.New("cannot listen on 0.0.0.0:7421: the port is in use")
	restarts := 0
	h.w.opts.Restart = func(done func(error)) {
		restarts++
		if !settings.Load(h.app.Preferences(), settings.Defaults()).LAN {
			t.Error("restarted without the setting saved")
		}
		if restartErr != nil {
			done(restartErr)
			return
		}
		h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/"}}
		// As the desktop does: the window moves to the new relay, then
		// hears that the restart is done.
		moveToRelay(t, h, nil, h.w.opts)
		done(nil)
	}
	d := h.w.showShare()
	h.frame()
	if !strings.Contains(d.reach(), "a phone cannot open its address, so no code is shown") || d.reachable == nil {
		t.Fatalf("reach %q, button %v", d.reach(), d.reachable)
	}
	d.name.SetText("Laptop browser")
	d.create()
	h.frame()
	if d.problem.Visible() || len(d.result.Objects) != 1 {
		t.Fatalf("after Make a token: problem %q, %d result objects", d.problem.Text, len(d.result.Objects))
	}
	if n := len(qrCodes(d.result)); n != 0 {
		t.Fatalf("%d QR codes for a relay on the loopback", n)
	}
	if !strings.Contains(listText(d.result.Objects[0]), "The link opens on this computer only") {
		t.Fatalf("the token's note: %q", listText(d.result.Objects[0]))
	}
	(&shooter{t: t, variant: "light"}).shot(h, "share-loopback")

	// The restart fails: the setting is back, the dialog says why.
	test.Tap(d.reachable)
	h.frame()
	if restarts != 1 || settings.Load(h.app.Preferences(), settings.Defaults()).LAN {
		t.Fatalf("%d restarts; the setting stayed on after a failed restart", restarts)
	}
	if !d.problem.Visible() || !strings.Contains(d.problem.Text, "the port is in use") || d.reachable.Disabled() {
		t.Fatalf("problem %q, button disabled %v", d.problem.Text, d.reachable.Disabled())
	}
	// It starts: the dialog opens again, on the network.
	restartErr = nil
	test.Tap(d.reachable)
	h.frame()
	if restarts != 2 || !settings.Load(h.app.Preferences(), settings.Defaults()).LAN {
		t.Fatalf("%d restarts, LAN saved %v", restarts, settings.Load(h.app.Preferences(), settings.Defaults()).LAN)
	}
	top := h.w.Window().Canvas().Overlays().Top()
	if top == nil || !strings.Contains(allText(top), "reachable from your network at https://192.168.1.20:7421") {
		t.Fatal("the dialog did not open again on the relay the network reaches")
	}
	// The dialog says where the relay is now: no notice behind it says
	// that it restarted.
	if n := h.w.notice; n != nil && n.id == relayNoticeID {
		t.Fatalf("a restart notice behind the dialog: %q", strings.Join(texts(n.root), "\n"))
	}
}

// qrCodes are the images drawn from pixels under o (the icons are drawn
// from resources): the dialog's QR codes.
func qrCodes(o fyne.CanvasObject) []*canvas.Image {
	var out []*canvas.Image
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		if img, ok := o.(*canvas.Image); ok && img.Resource == nil && img.Image != nil {
			out = append(out, img)
		}
		return true
	})
	return out
}

// allText is the text of every label under o.
func allText(o fyne.CanvasObject) string {
	var parts []string
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		if l, ok := o.(*widget.Label); ok {
			parts = append(parts, l.Text)
		}
		return true
	})
	return strings.Join(parts, "\n")
}

func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

func listText(o fyne.CanvasObject) string {
	switch o := o.(type) {
	case *widget.Label:
		return o.Text
	case *fyne.Container:
		var parts []string
		for _, c := range o.Objects {
			parts = append(parts, listText(c))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// A new token's device comes into view: in the default window the
// dialog scrolls so that its row shows below the token and its code,
// where it was below the fold and seemed not to be listed; the token's
// text still shows above it. It does so again for a second device.
func TestShareDialogShowsTheNewDevice(t *testing.T) {
	th := FixedVariant(theme.DefaultTheme(), theme.VariantLight)
	h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: defaultWindowSize})
	h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/"}}
	d := h.w.showShare()
	h.frame()
	for _, name := range []string{"Pixel", "Work laptop"} {
		d.name.SetText(name)
		d.create()
		h.frame()
		h.w.Window().Canvas().Overlays().Top().Refresh()
		row := d.rowOf[name]
		if row == nil {
			t.Fatalf("%s is not listed", name)
		}
		// Where the row and the token's text are in the window, against
		// the part of the dialog's content that shows.
		driver := fyne.CurrentApp().Driver()
		view := driver.AbsolutePositionForObject(d.scroll).Y
		rowTop := driver.AbsolutePositionForObject(row).Y
		rowBottom := rowTop + row.Size().Height
		if rowTop < view || rowBottom > view+d.scroll.Size().Height {
			t.Fatalf("%s's row is at %v-%v, the dialog shows %v-%v: out of view", name, rowTop, rowBottom, view, view+d.scroll.Size().Height)
		}
		if note := driver.AbsolutePositionForObject(d.result).Y; note < view {
			t.Errorf("the token of %s scrolled out of view (%v above %v)", name, note, view)
		}
		// Fyne draws the scroll bar over the content's right edge: the
		// row's Revoke button must end left of it.
		rowRight := driver.AbsolutePositionForObject(row).X + row.Size().Width
		bar := driver.AbsolutePositionForObject(d.scroll).X + d.scroll.Size().Width - theme.Size(theme.SizeNameScrollBarSmall)
		if rowRight > bar {
			t.Errorf("%s's row ends at x %v, under the scroll bar (from %v)", name, rowRight, bar)
		}
	}
	(&shooter{t: t, variant: "light"}).shot(h, "share-new-device")
}

// failingDevices is a relay's Devices that cannot be read.
type failingDevices struct {
	relayDevices
	err error
}

func (d failingDevices) Devices(context.Context) ([]DeviceInfo, error) { return nil, d.err }

// A devices list that cannot be read says why on as many lines as it
// takes: the long reason (a serve --nats embedded's, seen in a walk) was
// one line that widened the dialog past the window, cut on both sides.
func TestShareDialogWrapsWhyDevicesCannotBeRead(t *testing.T) {
	h := newHarness(t, harnessConfig{fakeClock: true, size: defaultWindowSize})
	why := errors.New("the relay of process 12127 keeps its device tokens in its NATS node in /tmp/walk/data-n, which it holds while it runs: stop it, make the token with pilotdesk token create --nats embedded --data-dir /tmp/walk/data-n, and start it again")
	h.w.opts.Devices = failingDevices{relayDevices: relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "ws://127.0.0.1:7420/ws"}}, err: why}
	d := h.w.showShare()
	h.frame()
	h.w.Window().Canvas().Overlays().Top().Refresh()
	pop, ok := h.w.Window().Canvas().Overlays().Top().(*widget.PopUp)
	if !ok {
		t.Fatal("the dialog is not the top overlay")
	}
	if !strings.Contains(listText(d.list.Objects[0]), "could not be read: "+why.Error()) {
		t.Fatalf("devices %q", listText(d.list.Objects[0]))
	}
	canvasSize := h.w.Window().Canvas().Size()
	if got := pop.Content.Size(); got.Width > canvasSize.Width-dialogMargin {
		t.Fatalf("the dialog is %v in a %v window: the reason widened it past the window", got, canvasSize)
	}
}
