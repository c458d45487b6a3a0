package memcluster

// Faults a test injects into one relay's view of the Net (Options.Fault):
// what a NATS cluster does to a relay under a partition, an election or
// a stream leader cut off and healed, played on a request of a given
// kind, for a given conversation, without a nats-server.

// The requests a fault may fail (Options.Fault's op).
const (
	OpAppend = "append" // a conversation's part of Store.Write: its error is the conversation's in the PartialWriteError
	OpClaim  = "claim"  // Cluster.Claim
	OpLatest = "latest" // Cluster.Latest
)

// fault is the error opts.Fault gives for op on conversation id, nil
// when there is none (or no Fault).
func (c *Cluster) fault(op, id string) error {
	if c == nil || c.faultFn == nil {
		return nil
	}
	return c.faultFn(op, id)
}
