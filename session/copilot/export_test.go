package copilot

import "github.com/pilotdesk/pilotdesk/session"

// EventQueueLen is eventQueueLen, for the tests.
const EventQueueLen = eventQueueLen

// QueuedEvents is how many events and questions of s wait for its pump.
func QueuedEvents(s session.Session) int {
	return s.(*Session).queue.Len()
}
