package relay

import (
	"testing"

	convwords "github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// A push says what the window's and the web page's notifications say for
// the same question or turn end: their words are conversation's
// (QuestionNotification, TurnNotification), which the relay may not
// import, so this test holds the relay's copy to them.
func TestPushWordsAreTheFrontEnds(t *testing.T) {
	for _, title := range []string{"Fix the tests", "", "  "} {
		got := pushJob{conversationID: "c", title: title, question: true}.payload(false)
		head, body := convwords.QuestionNotification(title, "")
		if got.Title != head || got.Body != body {
			t.Errorf("question push %q: %q / %q, the front ends say %q / %q", title, got.Title, got.Body, head, body)
		}
		for _, status := range []string{protocol.StatusCompleted, protocol.StatusError, protocol.StatusAborted, protocol.StatusRejected} {
			got := pushJob{conversationID: "c", title: title, status: status}.payload(false)
			head, body := convwords.TurnNotification(title, status, "")
			if got.Title != head || got.Body != body {
				t.Errorf("%s push %q: %q / %q, the front ends say %q / %q", status, title, got.Title, got.Body, head, body)
			}
		}
	}
}
