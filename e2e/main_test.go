package e2e

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// matrixParallel is how many matrix cases run at once unless -parallel
// says otherwise: each waits on real-time media far more than it computes,
// so running as many as the machine has cores would make the matrix last
// minutes for nothing. Under the race detector each costs several times
// the CPU, and too many at once stall past the protocol's timeouts.
func matrixParallel() int {
	if raceEnabled {
		return 6
	}
	return 12
}

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(matrixParallel()))
	}
	os.Exit(m.Run())
}
