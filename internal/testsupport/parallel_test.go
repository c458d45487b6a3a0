package testsupport

import (
	"flag"
	"testing"
)

// WaitingParallel sets -test.parallel unless the command line did, and
// leaves it as the command line said otherwise. (The tests of this process
// have already read the flag: setting it here changes nothing for them.)
func TestWaitingParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.parallel", before) })
	onCommandLine := false
	flag.Visit(func(f *flag.Flag) { onCommandLine = onCommandLine || f.Name == "test.parallel" })

	WaitingParallel(7)
	want := "7"
	if onCommandLine {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-test.parallel is %s after WaitingParallel(7), want %s (set on the command line: %v)", got, want, onCommandLine)
	}
}
