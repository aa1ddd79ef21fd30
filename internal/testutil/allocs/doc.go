// Package allocs counts heap allocations by the code that made them, so that
// a benchmark can tell this module's allocations on a path from those of its
// dependencies (quic-go, x/net) on the same path, in one run. It owns that
// counting only, for benchmarks and tests; nothing in a program imports it.
//
// It reads the runtime's memory profile (runtime.MemProfile) with every
// allocation sampled: what `go test -memprofile` and `go tool pprof
// -sample_index=alloc_objects` show, without leaving the benchmark.
package allocs
