package history_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

func TestMemoryConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store { return history.NewMemory() })
}

func TestMemoryEpochsDiffer(t *testing.T) {
	if a, b := history.NewMemory().Epoch(), history.NewMemory().Epoch(); a == b {
		t.Fatalf("two stores share epoch %q", a)
	}
}

func TestMemoryDevices(t *testing.T) {
	historytest.RunDevices(t, func(t *testing.T) (history.Devices, func() error) {
		m := history.NewMemory()
		return m, m.Close
	})
}
