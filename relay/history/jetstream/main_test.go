package jetstream

import (
	"os"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
)

// TestMain runs four tests at once: most start a 3-node nats-server cluster
// of their own and spend their time waiting for it, for leases and for
// elections, not computing.
func TestMain(m *testing.M) {
	testsupport.WaitingParallel(4)
	os.Exit(m.Run())
}
