package lexers

import (
	"io/fs"
	"testing"
)

// pilotdesk's patch: the lexers of the embedded XML files load on first
// use, and then the registry is upstream's.
func TestXMLLexersLoadOnFirstUse(t *testing.T) {
	goCoded := len(GlobalLexerRegistry.Lexers)
	paths, err := fs.Glob(embedded, "embedded/*.xml")
	if err != nil {
		t.Fatal(err)
	}
	if goCoded == 0 || goCoded >= len(paths) {
		t.Fatalf("before first use the registry holds %d lexers, want only the ones written in Go (there are %d XML files)", goCoded, len(paths))
	}
	if Get("python") == nil {
		t.Fatal(`Get("python") = nil after first use`)
	}
	// Every XML file is a lexer, and so is every lexer written in Go.
	if got, want := len(GlobalLexerRegistry.Lexers), len(paths)+goCoded; got < want-5 || got > want {
		t.Errorf("%d lexers after first use, want about %d (XML %d + Go %d, a few replacing XML ones)", got, want, len(paths), goCoded)
	}
	for _, name := range []string{"Go", "markdown", "PHP", "HTML", "YAML", "Bash", "dns", "MySQL", "Zed"} {
		if Get(name) == nil {
			t.Errorf("Get(%q) = nil", name)
		}
	}
}

// The analysers written in Go for XML lexers are set once those load.
func TestXMLLexersGetTheirGoAnalysers(t *testing.T) {
	for text, want := range map[string]string{
		"@ IN SOA ns1.example.com. admin.example.com. (\n":                                        "dns",
		"SELECT `a`, `b` FROM `t`":                                                                "MySQL",
		"definition user {}\ndefinition doc { relation viewer: user\n permission view = viewer }": "Zed",
	} {
		l := Analyse(text)
		if l == nil || l.Config().Name != want {
			t.Errorf("Analyse(%q) = %v, want the %s lexer", text, l, want)
		}
	}
}
