package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/internal/shellquote"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// minTokenLength is the length, in characters, under which serve warns
// that its --token is easy to guess (a hex token of 8 bytes), and refuses
// it on a non-loopback address (startStack).
const minTokenLength = 16

// serveToken gives `serve` a token when it was given none: no relay runs
// without one unless told --insecure-no-auth (docs/cli.md, Auth). A relay
// on a non-loopback address without a token is refused by startStack, as
// before: a token others on the network must type is the user's to choose.
// It reports whether it made the token.
func serveToken(s *relaySettings) bool {
	if s.Token != "" || s.InsecureNoAuth || relay.RequiresToken(s.Listen) {
		return false
	}
	s.Token = randomToken()
	return true
}

// refuseOpenDevices refuses --insecure-no-auth on a data dir that holds
// device tokens: the owner handed them out to limit what a device may do,
// and a relay without auth would let anyone do everything.
func refuseOpenDevices(ctx context.Context, s relaySettings, store history.Store) error {
	if !s.InsecureNoAuth || s.Token != "" {
		return nil
	}
	names, err := liveDeviceNames(ctx, s, store)
	if err != nil || len(names) == 0 {
		return err
	}
	return usageError("refusing --insecure-no-auth: %s holds device tokens (%s), which would mean nothing on a relay that lets anyone in as its owner. "+
		"Run with --token (or PILOTDESK_TOKEN), or revoke them with pilotdesk token revoke NAME", s.DataDir, strings.Join(names, ", "))
}

// announceAuth says, once the relay listens, how clients get in: where a
// token serve made is kept (never the token itself in the log: on
// standard output when there is no data dir to keep it in), a warning for
// a short token, and a loud one for a relay without auth.
func announceAuth(s relaySettings, made bool, running string, stdout io.Writer, logger *slog.Logger) {
	switch {
	case s.Token == "":
		where := "every process on this machine, whichever user runs it,"
		if relay.RequiresToken(s.Listen) {
			where = "anyone who can reach " + s.Listen + ","
		}
		logger.Warn("relay: RUNNING WITHOUT AUTHENTICATION (--insecure-no-auth): " + where +
			" can connect as the owner and run commands through the agent. Drop --insecure-no-auth to get a token")
	case made && running != "":
		logger.Info("relay token made for this run: clients must present it; pilotdesk chat and pilotdesk token on this data dir find it, others read it from the file (only this user can)",
			"file", running, "read", "jq -r .token "+shellquote.Word(filepath.Clean(running)))
	case made:
		// No data dir (:memory:): standard output is the only place.
		fmt.Fprintf(stdout, "relay token (made for this run; pass --token to choose one): %s\n", s.Token)
		logger.Info("relay token made for this run: printed on standard output, not logged")
	case utf8.RuneCountInString(s.Token) < minTokenLength:
		logger.Warn(fmt.Sprintf("relay: the token is %d characters long: one under %d is easy to guess; make one with openssl rand -hex 32", utf8.RuneCountInString(s.Token), minTokenLength))
	}
}

// liveDeviceNames lists, quoted, the names of the device tokens of the
// data dir that have not expired; none when the store keeps no devices.
func liveDeviceNames(ctx context.Context, s relaySettings, store history.Store) ([]string, error) {
	devs, ok := store.(history.Devices)
	if !ok {
		return nil, nil
	}
	list, err := devs.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the device tokens of %s: %w", s.DataDir, err)
	}
	now := time.Now()
	var names []string
	for _, d := range list {
		if !d.Expired(now) {
			names = append(names, strconv.Quote(d.Name))
		}
	}
	return names, nil
}
