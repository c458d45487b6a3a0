package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// layoutKey is the pd_meta key that says how many streams a history's
// conversations are spread over. Conversation records are keyed by their
// token, which never starts with an underscore (token), so it is nobody's.
const layoutKey = "_layout"

// layoutValue is what layoutKey holds.
type layoutValue struct {
	Streams int `json:"streams"`
}

// ErrLayout is a store asking for another number of streams than the
// history was made with.
var ErrLayout = errors.New("the history's number of streams differs")

// isLayoutKey says a pd_meta key is the layout's, not a conversation's.
func isLayoutKey(key string) bool { return strings.HasPrefix(key, "_") }

// layout returns how many streams the history has: the count pd_meta
// holds, or, for a new history (or one made before there were several),
// Options.Streams (1 if 0), which it writes there so that every relay of
// the cluster agrees. A store that asks for another count than the one
// written is refused: the hash would look for conversations in other
// streams than theirs.
func (s *Store) layout(ctx context.Context) (int, error) {
	want := s.opts.Streams
	if want < 0 || want > MaxStreams {
		return 0, fmt.Errorf("jetstream history: %d streams: want 1 to %d", want, MaxStreams)
	}
	for {
		var (
			e   jetstream.KeyValueEntry
			err error
		)
		err = s.leaderCall(ctx, func(ctx context.Context) (err error) {
			e, err = s.kv.Get(ctx, layoutKey)
			return err
		})
		switch {
		case err == nil:
			var l layoutValue
			if err := json.Unmarshal(e.Value(), &l); err != nil || l.Streams < 1 || l.Streams > MaxStreams {
				return 0, fmt.Errorf("jetstream history: a bad layout in %s key %s: %q", s.names.bucket, layoutKey, e.Value())
			}
			if want != 0 && want != l.Streams {
				return 0, fmt.Errorf("jetstream history: this history's conversations are spread over %d streams (%s key %s), and this relay asks for %d: %w; start every relay of the cluster with --nats-streams %d (docs/operations.md, Several event streams)",
					l.Streams, s.names.bucket, layoutKey, want, ErrLayout, l.Streams)
			}
			return l.Streams, nil
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return 0, fmt.Errorf("jetstream history: read the layout (%s key %s): %w", s.names.bucket, layoutKey, err)
		}
		if want == 0 {
			// A reader of a history nobody has written a layout for: one
			// made before there were several streams, or none yet.
			return 1, nil
		}
		if want > 1 {
			if err := s.refuseOldHistory(ctx, want); err != nil {
				return 0, err
			}
		}
		b, _ := json.Marshal(layoutValue{Streams: want})
		err = s.leaderCall(ctx, func(ctx context.Context) error {
			_, err := s.kv.Create(ctx, layoutKey, b)
			return err
		})
		if err == nil {
			return want, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("jetstream history: write the layout (%s key %s): %w", s.names.bucket, layoutKey, err)
		}
		// Another relay wrote it meanwhile: read theirs.
	}
}

// refuseOldHistory refuses to spread a history made with one stream (its
// PD_EVENTS holds conversations, and no layout was written) over several:
// each conversation would be looked for where the hash says, not in
// PD_EVENTS where it is.
func (s *Store) refuseOldHistory(ctx context.Context, want int) error {
	var info *jetstream.StreamInfo
	err := s.leaderCall(ctx, func(ctx context.Context) error {
		st, err := s.js.Stream(ctx, s.names.stream)
		if err != nil {
			return err
		}
		info, err = st.Info(ctx)
		return err
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstream history: look for a history of one stream (%s): %w", s.names.stream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	return fmt.Errorf("jetstream history: stream %s holds %d messages of a history made with one stream, and this relay asks for %d: %w; keep --nats-streams 1 for it, or move it (docs/operations.md, Several event streams)",
		s.names.stream, info.State.Msgs, want, ErrLayout)
}
