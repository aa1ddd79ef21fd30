package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestTheLogOfAFailedCaseKeepsItsStartAndItsEnd: the excerpt a failed
// case prints of a long log holds its first lines (the connection, the
// subscriptions, the join's backfill) and its last ones, not only the
// end: hs26's failed moq-transport-19 resume case, whose audio started
// 2 s late, printed only the resume's last 6,000 characters, and what its
// join did could not be read.
func TestTheLogOfAFailedCaseKeepsItsStartAndItsEnd(t *testing.T) {
	for _, c := range []struct {
		name   string
		filler int // lines between the first and the last
	}{
		{"a short log", 3},
		{"a log of a long resume", 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l logBuffer
			fmt.Fprintf(&l, "level=DEBUG msg=\"moq: connected\" version=moq-transport-19\n")
			fmt.Fprintf(&l, "level=DEBUG msg=\"moq: backfill stopped\" group=1406 err=\"context deadline exceeded\"\n")
			for i := range c.filler {
				fmt.Fprintf(&l, "level=DEBUG msg=\"moq: group landed before SUBSCRIBE_OK, waiting for it\" track=1.m4s group=%d\n", i)
			}
			fmt.Fprintf(&l, "level=INFO msg=\"output finished\"\n")
			got := l.tail()
			for _, want := range []string{"moq: connected", "moq: backfill stopped", "output finished"} {
				if !strings.Contains(got, want) {
					t.Errorf("the excerpt lacks %q:\n%s", want, got)
				}
			}
			if n := len(got); n > logHead+logTail+8 {
				t.Errorf("the excerpt holds %d characters, want %d at most", n, logHead+logTail+8)
			}
			if c.filler > 100 && !strings.Contains(got, "...\n") {
				t.Errorf("a long log's excerpt does not say what it left out")
			}
		})
	}
}
