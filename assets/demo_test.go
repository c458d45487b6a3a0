package assets

import (
	"encoding/json"
	"testing"
)

// The demo's format is checked by session/script (its parser and tour
// tests); this only guards the embedding itself.
func TestDemoScriptIsEmbedded(t *testing.T) {
	var doc struct {
		Turns []json.RawMessage `json:"turns"`
	}
	if err := json.Unmarshal(DemoScript, &doc); err != nil {
		t.Fatalf("demo.json is not valid JSON: %v", err)
	}
	if len(doc.Turns) == 0 {
		t.Fatal("demo.json has no turns")
	}
}
