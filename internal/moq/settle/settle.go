// Package settle is the command's way to park a subscribe.Session's waits
// afresh (its memory returner, internal/cli/memory.go) without that being
// public API of package subscribe: when to do it is a process-wide choice
// (it goes with a collection and debug.FreeOSMemory), so the command
// makes it, and a library user never needs to.
//
// Package subscribe registers its implementation at init; this package
// imports nothing of the module, so either side can import it.
package settle

import "context"

// parker is package subscribe's implementation, set by Register.
var parker func(ctx context.Context, session any) bool

// Register installs f as what Session does; package subscribe calls it
// once at init.
func Register(f func(ctx context.Context, session any) bool) { parker = f }

// Session parks afresh every subscription of session (a
// *subscribe.Session) that waits for its publisher's next response, and
// returns once they did or ctx ended. It reports false when session is
// not one (or package subscribe is not linked in).
func Session(ctx context.Context, session any) bool {
	if parker == nil {
		return false
	}
	return parker(ctx, session)
}
