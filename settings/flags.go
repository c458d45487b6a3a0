package settings

import (
	"flag"
	"slices"
)

// The window's settings come from four places, strongest first: a flag
// given on the command line, the environment variable that stands in for
// it, the saved preferences, and the defaults. RegisterFlags gives each flag
// the environment's value or the default; Locked says which settings the
// command line (flags and environment) fixed; Merge fills the others from
// the saved preferences.

// RegisterFlags registers on fs the flags of the settings of the given
// groups, bound to s. Each starts at its environment variable's value
// (getenv) when that is set, else at the setting's default.
func RegisterFlags(fs *flag.FlagSet, s *Settings, getenv func(string) string, groups ...Group) {
	def := Defaults()
	for _, r := range table {
		if r.Flag == "" || !slices.Contains(groups, r.Group) {
			continue
		}
		r.Copy(s, def)
		if r.Env != "" {
			// Settings with an environment variable are strings (a
			// test checks it): the value is taken as it is.
			if v := getenv(r.Env); v != "" {
				*r.str(s) = v
			}
		}
		switch {
		case r.setFlag != nil:
			fs.Var(&funcValue{r: r, s: s}, r.Flag, r.Usage)
		case r.Kind == KindDuration:
			fs.DurationVar(r.dur(s), r.Flag, *r.dur(s), r.Usage)
		case r.Kind == KindBool:
			fs.BoolVar(r.boolean(s), r.Flag, *r.boolean(s), r.Usage)
		case r.Kind == KindNumber:
			fs.Float64Var(r.num(s), r.Flag, *r.num(s), r.Usage)
		case r.Kind == KindInt:
			fs.IntVar(r.integer(s), r.Flag, *r.integer(s), r.Usage)
		default:
			fs.StringVar(r.str(s), r.Flag, *r.str(s), r.Usage)
		}
		if r.Secret {
			// -h prints a flag's default: never a secret from the
			// environment.
			f := fs.Lookup(r.Flag)
			f.DefValue = masked(f.DefValue)
		}
	}
}

// funcValue is a flag that does more than set its setting (setFlag).
type funcValue struct {
	r Setting
	s *Settings
}

func (v *funcValue) String() string {
	if v == nil || v.s == nil {
		return "" // flag.PrintDefaults asks a zero value
	}
	return v.r.Text(*v.s)
}

func (v *funcValue) Set(text string) error {
	v.r.setFlag(v.s, text)
	return nil
}

// Locked returns the settings the command line fixes for this run, each
// with what fixed it ("--model", "PILOTDESK_PROVIDER_KEY"). fs must have
// been parsed: its Visit walks the flags given.
func Locked(fs *flag.FlagSet, getenv func(string) string) map[Field]string {
	locked := map[Field]string{}
	given := map[string]bool{}
	// Visit goes in lexical order: of two flags that fix a setting, the
	// later one names it (--script over --agent, --token over --connect).
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		for _, r := range table {
			if r.Flag == f.Name || slices.Contains(r.LockedBy, f.Name) {
				locked[r.Field] = "--" + f.Name
			}
		}
	})
	for _, r := range table {
		if r.Env == "" || given[r.Flag] || getenv(r.Env) == "" {
			continue
		}
		if _, ok := locked[r.Field]; !ok {
			locked[r.Field] = r.Env
		}
	}
	return locked
}

// Merge returns the settings of a run: cmd's value for each setting locked
// names (what the command line fixed), saved's for the others.
func Merge(cmd, saved Settings, locked map[Field]string) Settings {
	out := saved
	for _, r := range table {
		if _, ok := locked[r.Field]; ok {
			r.Copy(&out, cmd)
		}
	}
	return out
}
