package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/record"
)

// TestTheWaitNoticeSaysWhatIsWaitedFor: a recording of a named broadcast
// (-b) waits for it to be announced; one of --record-all was started by
// its announcement, so what it waits for is the catalog, and the notice
// says so.
func TestTheWaitNoticeSaysWhatIsWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recordAll bool
		w         record.Waiting
		want      string
	}{
		{"any broadcast", false, record.Waiting{Origin: "under moql://relay/"},
			"waiting for broadcasts to be announced under moql://relay/ (until Ctrl-C"},
		{"a named broadcast", false, record.Waiting{Broadcast: "room/alice", Origin: "under moql://relay/"},
			`waiting for broadcast "room/alice" to be announced under moql://relay/ (until Ctrl-C`},
		{"an announced broadcast of --record-all", true, record.Waiting{Broadcast: "room/alice", Origin: "under moql://relay/", Wait: 30 * time.Second},
			`broadcast "room/alice" is announced under moql://relay/ but has sent no catalog yet; waiting for it (giving up after --wait 30s)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			con := newConsole(&logs, false, nil)
			a := &app{cfg: &Config{RecordAll: tc.recordAll}, con: con, log: newLogger(con, logText, LevelNotice)}
			a.sayWaiting(tc.w)
			if got := logs.String(); !strings.Contains(got, tc.want) {
				t.Errorf("notice %q, want it to say %q", got, tc.want)
			}
		})
	}
}
