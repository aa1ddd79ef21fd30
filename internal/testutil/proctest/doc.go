// Package proctest starts the processes tests run (the command under
// test, a test binary re-executed as a child, the reference
// implementation, emulated stores) so that none outlives the test binary
// that started it.
//
// A test binary that runs past go test's -timeout is killed: it runs no
// t.Cleanup, and a process it started that serves or records until killed
// (a publisher, a listener, a recorder without --duration, a store
// emulator) lived on, for as long as an hour. On Linux a process from
// Command or CommandContext (or one Bind was given before its Start) is
// sent SIGKILL by the kernel when the thread that started it dies, which
// is when its test binary dies: Go ends a thread only with a goroutine that
// locked it and returned without unlocking, which no test does around a
// Start. On other systems Bind does nothing.
//
// KillMidRun is the check: it runs one test of the binary as a child,
// kills it once that test has started its processes (Hold), and fails if
// any process the child started is still running.
//
// Tools run on finished files (ffprobe, mkvinfo, go build) end by
// themselves and need none of this.
//
// It imports testing and is for _test.go files only.
package proctest
