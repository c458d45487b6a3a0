package memcluster_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/clustertest"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
	"github.com/pilotdesk/pilotdesk/relay/history/memcluster"
)

var (
	_ history.Cluster  = (*memcluster.Cluster)(nil)
	_ history.Store    = (*memcluster.Store)(nil)
	_ history.Ledger   = (*memcluster.Store)(nil)
	_ history.Devices  = (*memcluster.Store)(nil)
	_ history.Pushes   = (*memcluster.Store)(nil)
	_ history.PushKeys = (*memcluster.Store)(nil)
	_ history.Presence = (*memcluster.Cluster)(nil)
)

func TestConformance(t *testing.T) {
	t.Parallel()
	clustertest.Run(t, func(t *testing.T) clustertest.NewMember {
		n := memcluster.New()
		return func(t *testing.T, o clustertest.Options) (history.Store, history.Cluster) {
			s := n.NewStore()
			return s, n.NewCluster(s, memcluster.Options{Lease: o.Lease, RenewEvery: o.RenewEvery})
		}
	})
}

// A relay's store on a Net is a history store like any other.
func TestStore(t *testing.T) {
	t.Parallel()
	historytest.Run(t, func(t *testing.T) history.Store { return memcluster.New().NewStore() })
}
