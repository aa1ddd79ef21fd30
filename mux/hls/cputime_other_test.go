//go:build !unix

package hls_test

import "time"

// cpuTime is not measured here: the benchmark reports 0 CPU time.
func cpuTime() time.Duration { return 0 }

// sysTime is not measured here either.
func sysTime() time.Duration { return 0 }
