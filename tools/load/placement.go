package main

import (
	"fmt"
	"slices"
)

// Which relay each connection goes to with -nats (-placement). Connection
// i watches conversation i mod -convs, and the first connection of each
// (i < -convs) sends its prompts: its relay writes the conversation first
// and owns it. A client on another relay is served by that relay's
// following of the conversation (the stream's republish, the relay's live
// subscription, its own fan-out), which is what the spread placement
// measures and the owner placement leaves out.
const (
	// placeConn sends connection i to relay i mod relays, whatever its
	// conversation (the tool's placement before -placement). When -convs
	// is a multiple of the relays it is placeOwner's: every client of a
	// conversation on its owner, nothing followed.
	placeConn = "conn"
	// placeSpread sends the k-th connection of a conversation to relay
	// (owner + k) mod relays: every conversation's clients spread evenly
	// over the relays, as a load balancer that knows nothing of
	// conversations places them, most of them on relays that follow it.
	placeSpread = "spread"
	// placeOwner sends every connection of a conversation to its owner:
	// a load balancer that routes by conversation; nothing is followed.
	placeOwner = "owner"
	// placeBoth is -scale's: every count of relays above one run in
	// each of spread and owner, side by side in the same invocation.
	placeBoth = "both"
)

const placementUsage = placeSpread + " (a conversation's connections spread over the relays), " +
	placeOwner + " (all on the relay that owns it), " + placeConn + " (connection i on relay i mod -relays), or with -scale " +
	placeBoth + " (spread and owner side by side)"

func validPlacement(p string, scale bool) error {
	switch p {
	case placeConn, placeSpread, placeOwner:
		return nil
	case placeBoth:
		if scale {
			return nil
		}
		return fmt.Errorf("-placement %s goes with -scale", p)
	}
	return fmt.Errorf("-placement %q: want %s", p, placementUsage)
}

// scalePlacements is what -scale runs each count of relays above one in.
func scalePlacements(p string) []string {
	if p == placeBoth {
		return []string{placeSpread, placeOwner}
	}
	return []string{p}
}

// homeOf is the relay connection i of conns goes to.
func homeOf(placement string, i, convs, relays int) int {
	conv, k := i%convs, i/convs // k: the connection's place among its conversation's
	switch placement {
	case placeSpread:
		return (conv + k) % relays
	case placeOwner:
		return conv % relays
	default:
		return i % relays
	}
}

// following counts the connections on a relay that does not own their
// conversation (its sender's relay), of all of them.
func following(placement string, conns, convs, relays int) (off, all int) {
	for i := range conns {
		if homeOf(placement, i, convs, relays) != homeOf(placement, i%convs, convs, relays) {
			off++
		}
	}
	return off, conns
}

// placementsOf lists the placements runs were made in, in the order
// given, without repeats.
func placementsOf(runs []scaleRun) []string {
	var out []string
	for _, r := range runs {
		if r.relays > 1 && !slices.Contains(out, r.placement) {
			out = append(out, r.placement)
		}
	}
	return out
}
