package settings

// Preferences is what Load and Save need of a preference store.
// fyne.Preferences has these methods, so the app's preferences serve as
// they are and this package needs no Fyne.
type Preferences interface {
	StringWithFallback(key, fallback string) string
	SetString(key, value string)
	BoolWithFallback(key string, fallback bool) bool
	SetBool(key string, value bool)
}

// batchWriter is what the window's preference store (internal/prefsfile)
// and Fyne's own (internal.InMemoryPreferences, also the test driver's)
// offer besides Preferences: one write for many values.
type batchWriter interface {
	WriteValues(func(map[string]any))
}

// Load reads the settings from p; what p does not hold comes from def. A
// stored value the user could not have saved (an edited file) falls back
// to def's rather than failing the start.
func Load(p Preferences, def Settings) Settings {
	s := def
	for _, r := range table {
		switch r.Kind {
		case KindBool:
			*r.boolean(&s) = p.BoolWithFallback(r.PrefKey(), *r.boolean(&def))
		case KindDuration, KindNumber, KindInt:
			if raw := p.StringWithFallback(r.PrefKey(), ""); raw != "" {
				_ = r.SetText(&s, raw) // on error s keeps def's value
			}
		default:
			*r.str(&s) = p.StringWithFallback(r.PrefKey(), *r.str(&def))
		}
	}
	return s
}

// Save writes every setting of s to p, in one change where p allows it:
// a file-backed store writes the whole file for a change, so twelve
// separate changes could mean twelve writes.
func Save(p Preferences, s Settings) {
	values := make(map[string]any, len(table))
	for _, r := range table {
		if r.Kind == KindBool {
			values[r.PrefKey()] = *r.boolean(&s)
		} else {
			values[r.PrefKey()] = r.Text(s)
		}
	}
	if batch, ok := p.(batchWriter); ok {
		batch.WriteValues(func(m map[string]any) {
			for k, v := range values {
				m[k] = v
			}
		})
		return
	}
	for k, v := range values {
		switch v := v.(type) {
		case string:
			p.SetString(k, v)
		case bool:
			p.SetBool(k, v)
		}
	}
}
