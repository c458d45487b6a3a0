package relay

import "testing"

// The refusal names the budget with its noun in the right number: a
// budget of one credit was refused as "spent 1.15 of 1 credits".
func TestCreditsOf(t *testing.T) {
	for nanoAIU, want := range map[int64]string{
		1e9:   "1 credit",
		10e9:  "10 credits",
		5e8:   "0.5 credits",
		115e7: "1.15 credits",
		0:     "0 credits",
	} {
		if got := creditsOf(nanoAIU); got != want {
			t.Errorf("creditsOf(%d) = %q, want %q", nanoAIU, got, want)
		}
	}
}
