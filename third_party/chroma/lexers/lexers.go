package lexers

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

//go:embed embedded
var embedded embed.FS

// GlobalLexerRegistry is the global LexerRegistry of Lexers.
//
// pilotdesk's patch: at init it holds only the lexers written in Go; the
// lexers of the embedded XML files are added, before them as upstream has
// them, by the first function of this package that uses the registry
// (registry). Parsing the XML files at init cost every program that
// imports this package about 10 ms before main (with the garbage
// collection it brings in, on a 2-core machine).
var GlobalLexerRegistry = chroma.NewLexerRegistry()

var loadXMLOnce sync.Once

// xmlAnalysers are analysers written in Go for lexers of the embedded XML
// files, by lexer name; registry sets them once it has loaded those
// (pilotdesk's patch: upstream's init functions set them with Get).
var xmlAnalysers = map[string]func(text string) float32{}

// registry is GlobalLexerRegistry with every lexer in it.
func registry() *chroma.LexerRegistry {
	loadXMLOnce.Do(func() {
		reg := chroma.NewLexerRegistry()
		paths, err := fs.Glob(embedded, "embedded/*.xml")
		if err != nil {
			panic(err)
		}
		for _, path := range paths {
			reg.Register(chroma.MustNewXMLLexer(embedded, path))
		}
		for name, analyse := range xmlAnalysers {
			reg.Get(name).SetAnalyser(analyse)
		}
		for _, lexer := range GlobalLexerRegistry.Lexers {
			reg.Register(lexer)
		}
		GlobalLexerRegistry = reg
	})
	return GlobalLexerRegistry
}

// Names of all lexers, optionally including aliases.
func Names(withAliases bool) []string {
	return registry().Names(withAliases)
}

// Aliases of all the lexers, and skip those lexers who do not have any aliases,
// or show their name instead
func Aliases(skipWithoutAliases bool) []string {
	return registry().Aliases(skipWithoutAliases)
}

// Get a Lexer by name, alias or file extension.
//
// Note that this if there isn't an exact match on name or alias, this will
// call Match(), so it is not efficient.
func Get(name string) chroma.Lexer {
	return registry().Get(name)
}

// MatchMimeType attempts to find a lexer for the given MIME type.
func MatchMimeType(mimeType string) chroma.Lexer {
	return registry().MatchMimeType(mimeType)
}

// Match returns the first lexer matching filename.
//
// Note that this iterates over all file patterns in all lexers, so it's not
// particularly efficient.
func Match(filename string) chroma.Lexer {
	return registry().Match(filename)
}

// Register a Lexer with the global registry.
//
// pilotdesk's patch: a lexer registered before the registry is first used
// (the lexers written in Go, at init) is registered again, after the XML
// ones, when it is.
func Register(lexer chroma.Lexer) chroma.Lexer {
	return GlobalLexerRegistry.Register(lexer)
}

// Analyse text content and return the "best" lexer..
func Analyse(text string) chroma.Lexer {
	return registry().Analyse(text)
}

// PlaintextRules is used for the fallback lexer as well as the explicit
// plaintext lexer.
func PlaintextRules() chroma.Rules {
	return chroma.Rules{
		"root": []chroma.Rule{
			{`.+`, chroma.Text, nil},
			{`\n`, chroma.Text, nil},
		},
	}
}

// Fallback lexer if no other is found.
var Fallback chroma.Lexer = chroma.MustNewLexer(&chroma.Config{
	Name:      "fallback",
	Filenames: []string{"*"},
	Priority:  -1,
}, PlaintextRules)
