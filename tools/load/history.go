package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// verifyHistory replays every conversation from seq 0 on its own connection
// and checks that the relay's stored history holds seq 1…final, each once and
// in order, and nothing after: every event any subscriber received is stored.
// It returns how many events it checked and the problems found.
func verifyHistory(ctx context.Context, url, token string, convs []*conversation, conc int) (int64, []string) {
	var (
		checked  atomic.Int64
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
		sem      = make(chan struct{}, conc)
	)
	for _, conv := range convs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := replay(ctx, url, token, conv)
			checked.Add(n)
			if err != nil {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("conversation %d (%s): %v", conv.index, conv.id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return checked.Load(), problems
}

func replay(ctx context.Context, url, token string, conv *conversation) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	sub, _ := json.Marshal(map[string]any{"type": "copilot:subscribe", "data": map[string]any{"conversationId": conv.id, "sinceSeq": 0}})
	if err := conn.Write(ctx, websocket.MessageText, sub); err != nil {
		return 0, fmt.Errorf("subscribe: %w", err)
	}
	final := conv.final.Load()
	var next int64 = 1
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return next - 1, fmt.Errorf("after seq %d: %w", next-1, err)
		}
		var f frame
		if err := json.Unmarshal(msg, &f); err != nil {
			return next - 1, fmt.Errorf("undecodable frame %.200s", msg)
		}
		if f.Type == "copilot:subscribed" {
			switch {
			case next-1 != f.Data.Seq:
				return next - 1, fmt.Errorf("the replay ended at seq %d but copilot:subscribed says %d", next-1, f.Data.Seq)
			case final >= 0 && f.Data.Seq != final:
				return next - 1, fmt.Errorf("the history ends at seq %d, but the subscribers got up to %d", f.Data.Seq, final)
			}
			return next - 1, nil
		}
		if f.Data.Seq != next {
			return next - 1, fmt.Errorf("the replay gave seq %d after %d (%s)", f.Data.Seq, next-1, f.Type)
		}
		if !conv.sameFrame(f.Data.Seq, msg) {
			return next - 1, fmt.Errorf("seq %d (%s) replays with other bytes than a subscriber got: %.200s", f.Data.Seq, f.Type, msg)
		}
		next++
	}
}
