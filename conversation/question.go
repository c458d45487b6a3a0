package conversation

import (
	"fmt"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// The dialog of an open question, the window's and the web client's: its
// title, the keys both take alike, and the words that teach them (the
// line under the question, and the hint that a key the question does not
// take, or an empty answer, brings up). The terminal answers a question
// with a line, in its own words (chat/request.go).

// QuestionTitle is the title of the dialog of a question of inputType: an
// approval, a choice, one answered in words, or, any other, the agent's
// plain question (ask_user).
func QuestionTitle(inputType string) string {
	switch inputType {
	case protocol.InputApproval:
		return "Approval needed"
	case protocol.InputChoice:
		return "Choose an option"
	case protocol.InputText:
		return "The agent needs your input"
	}
	return "The agent asks"
}

// AnswerRefusedText is the hint of a question the relay reopened, with its
// reason, after it did not accept the answer.
func AnswerRefusedText(why string) string {
	return "The relay did not accept that answer: " + why
}

// AnswerNotSentText is the hint of a question reopened because the
// client could not send its answer (rejected: its rejection) to the relay,
// which never saw it: err says why.
func AnswerNotSentText(rejected bool, err error) string {
	what := "answer"
	if rejected {
		what = "rejection"
	}
	return "Your " + what + " was not sent (" + err.Error() + "): give it again once the window is connected."
}

// ViewerCannotAnswer is under a question shown to a viewer, which may read
// it but not answer: the relay refuses a viewer's answer (protocol's
// roles), so the dialog offers none and says who can.
const ViewerCannotAnswer = "This device is a viewer: it cannot answer. The agent waits for a controller or the owner to answer or reject it."

// ApprovalKeys is the line under an approval.
const ApprovalKeys = "Keys: a or 1 approves, r or 2 rejects (rejecting stops the agent)."

// ApprovalHint answers a key an approval does not take.
const ApprovalHint = "Press a or 1 to approve, r or 2 to reject."

// TextKeys is the line under a question answered in words.
const TextKeys = "Enter sends. Type r or /reject alone to reject (that stops the agent)."

// AnswerRequired answers an empty answer to a question answered in words.
const AnswerRequired = "An answer is required. Type it and press Enter, or type r to reject."

// AnswerOrPick answers an empty answer to a choice that also takes the
// user's own.
const AnswerOrPick = "Type an answer first, or pick one of the options."

// ChoiceKeys is the line under a choice of n options.
func ChoiceKeys(n int) string {
	if n == 1 {
		return "Keys: 1 picks, ↑/↓ then Enter, r rejects."
	}
	return fmt.Sprintf("Keys: 1–%d picks, ↑/↓ then Enter, r rejects.", n)
}

// ChoiceHint answers a key a choice of n options does not take (none: a
// question answered only in words).
func ChoiceHint(n int) string {
	switch n {
	case 0:
		return "Type your answer in the field, or press r to reject."
	case 1:
		return "Press 1 (or ↓ then Enter) to pick the option, or r to reject."
	}
	return fmt.Sprintf("Press a number from 1 to %d, or ↑/↓ then Enter, or r to reject.", n)
}

// TypedChoiceHint says what Enter does after the digits typed of an
// option's number (a choice of ten or more options takes them one by one).
func TypedChoiceHint(typed string) string {
	return typed + ": press Enter to pick it."
}

// NothingSelectedHint answers Enter on a choice of n options none of
// which is selected.
func NothingSelectedHint(n int) string {
	return "Nothing is selected. " + ChoiceHint(n)
}
