package soak

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// A kill during the recovery of a long blip loses the live media held
// behind the gap fill on top of its own last second: the eighth one-hour
// soak counted 3.55 s for a kill 36 s after a 37 s blip, against the 2 s
// bound of a kill in steady state. The soak now reads how far each
// recording trailed live at the kill and checks the bound against the
// kill's own part; a recording far behind must not hide another's breach.
func TestAKillsBoundIsJudgedOnItsOwnPartNotOnTheRecoveryItFound(t *testing.T) {
	s := time.Second
	tests := []struct {
		name        string
		behind      map[string]float64
		losses      map[string]time.Duration
		worst       string
		loss, own   time.Duration
		behindWorst time.Duration
	}{
		{"a kill in steady state is its loss", map[string]float64{"legacy": 0.1, "loc": 0.2, "cmaf": 0.1},
			map[string]time.Duration{"legacy/aac": 800 * time.Millisecond, "loc/h264": 1100 * time.Millisecond}, "loc/h264",
			1100 * time.Millisecond, 900 * time.Millisecond, 200 * time.Millisecond},
		{"a kill during a gap fill is judged less what the fill held", map[string]float64{"legacy": 0.2, "loc": 33.7, "cmaf": 0.3},
			map[string]time.Duration{"legacy/aac": 800 * time.Millisecond, "loc/aac": 35*s + 200*time.Millisecond}, "loc/aac",
			35*s + 200*time.Millisecond, 1500 * time.Millisecond, 33*s + 700*time.Millisecond},
		{"a recording far behind does not hide another's breach", map[string]float64{"legacy": 0.1, "loc": 33.7},
			map[string]time.Duration{"legacy/aac": 2600 * time.Millisecond, "loc/aac": 34 * s}, "legacy/aac",
			2600 * time.Millisecond, 2500 * time.Millisecond, 100 * time.Millisecond},
		{"without the figures (the API did not answer) the whole loss counts", nil,
			map[string]time.Duration{"legacy/aac": 3550 * time.Millisecond, "loc/aac": 900 * time.Millisecond}, "legacy/aac",
			3550 * time.Millisecond, 3550 * time.Millisecond, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &soakFault{kind: "recorder kill", behind: tc.behind}
			f.judge(tc.losses)
			round := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
			if f.worst != tc.worst || round(f.loss) != tc.loss || round(f.own) != tc.own || round(f.behindWorst) != tc.behindWorst {
				t.Errorf("worst %s lost %v own %v behind %v, want %s %v %v %v", f.worst, f.loss, f.own, f.behindWorst,
					tc.worst, tc.loss, tc.own, tc.behindWorst)
			}
		})
	}
}

// The soak waits before a fault until the recorders it touches record
// every broadcast within a second of live, read from each one's control
// API, and says how long it waited; a recorder still behind at the limit
// ends the wait, and the fault's row says so.
func TestTheSoakWaitsUntilTheRecordersItTouchesCaughtUp(t *testing.T) {
	serve := func(t *testing.T, figures [][3]float64) (*soakRecorder, *atomic.Int64) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path != "/api/v1/recordings" {
				http.NotFound(w, req)
				return
			}
			f := figures[min(int(n.Add(1))-1, len(figures)-1)]
			var recs []string
			for i, b := range strings.Split(cmdtest.SoakBroadcasts, ",") {
				name, _, _ := strings.Cut(b, "=")
				recs = append(recs, fmt.Sprintf(`{"broadcast":%q,"state":"recording","stats":{"behind_seconds":%g}}`, name, f[i]))
			}
			fmt.Fprintf(w, `{"recordings":[%s]}`, strings.Join(recs, ","))
		}))
		t.Cleanup(srv.Close)
		r := &soakRecorder{name: "flv/ietf"}
		fmt.Fprintf(&r.log, "moq-export: serving metrics, the API and the status page on %s\nmoq-export: info: writing\n", srv.URL)
		return r, &n
	}
	t.Run("a recorder that catches up ends the wait", func(t *testing.T) {
		r, polls := serve(t, [][3]float64{{0.2, 36.9, 0.3}, {0.2, 12.0, 0.3}, {0.2, 0.4, 0.3}})
		waited, timedOut := soakWaitCaughtUp(context.Background(), []*soakRecorder{r}, 10*time.Second)
		if timedOut || polls.Load() != 3 || waited < 500*time.Millisecond || waited > 5*time.Second {
			t.Errorf("waited %v (timed out %v) over %d looks, want 3 looks 250 ms apart", waited, timedOut, polls.Load())
		}
	})
	t.Run("a recorder still behind at the limit ends it too", func(t *testing.T) {
		r, polls := serve(t, [][3]float64{{0.2, 36.9, 0.3}})
		waited, timedOut := soakWaitCaughtUp(context.Background(), []*soakRecorder{r}, 600*time.Millisecond)
		if !timedOut || waited < 600*time.Millisecond || waited > 5*time.Second || polls.Load() < 2 {
			t.Errorf("waited %v (timed out %v) over %d looks, want the 600 ms limit", waited, timedOut, polls.Load())
		}
	})
	t.Run("a recorder missing a recording is not caught up", func(t *testing.T) {
		if soakCaughtUp(map[string]float64{"legacy": 0.1, "loc": 0.1}) || soakCaughtUp(nil) {
			t.Error("caught up without every broadcast recording")
		}
		if !soakCaughtUp(map[string]float64{"legacy": 0.1, "loc": 0.9, "cmaf": 0}) {
			t.Error("not caught up within a second of live")
		}
	})
}
