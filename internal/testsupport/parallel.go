package testsupport

import (
	"flag"
	"strconv"
)

// WaitingParallel sets how many of a package's parallel tests run at once
// (go test -parallel), unless the command line set it: for a TestMain of a
// package whose tests mostly wait, on the processes they start, on leases
// and on elections, rather than compute. -parallel defaults to GOMAXPROCS,
// 2 on a 2-core machine, where such tests would take turns at waiting.
// Call it before m.Run.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
