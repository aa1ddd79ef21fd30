package record

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/mux"
)

// Telling a track that stopped alone.
//
// A track that receives nothing while the other tracks of its recording
// do has stopped alone: its subscription did not resume after a restart
// of the publisher, or the engine's reader waits at a group that does not
// come, or holds it back to align it. Nothing is lost silently, but the
// recording of that track stops for as long as it lasts (once, the cmaf
// audio of a soak's publisher restart, 25 s until the recorder was
// killed). Every second, the recorder compares the frames each track
// received; a track that received nothing for silentAfter while another
// one did is logged once as a warning, with what its source track holds
// and where the engine's reader of it stands (export.TrackState), and
// again, at info, when it receives again.

// silentAfter is how long a track may receive nothing while another track
// of its recording receives frames before it is logged; silenceEvery is
// how often the recordings are looked at. Tests shorten both.
var (
	silentAfter  = 5 * time.Second
	silenceEvery = time.Second
)

// watchedRecording is what the silence check reads of a running
// recording: the export's accounting and its tracks' state.
type watchedRecording interface {
	TrackStats() []export.TrackStats
	TrackState(name string) (export.TrackState, bool)
	Behind() time.Duration
}

// silence remembers, per recording and track, when the track last
// received a frame.
type silence struct {
	seen map[watchedRecording]map[string]*trackSeen
}

type trackSeen struct {
	received int64
	changed  time.Time // when received last changed (or was first seen)
	warned   bool
}

// check looks at the recordings running now (broadcast by recording).
func (s *silence) check(log *slog.Logger, now time.Time, running map[watchedRecording]string) {
	if s.seen == nil {
		s.seen = map[watchedRecording]map[string]*trackSeen{}
	}
	for w := range s.seen {
		if _, ok := running[w]; !ok {
			delete(s.seen, w)
		}
	}
	for w, broadcast := range running {
		seen := s.seen[w]
		if seen == nil {
			seen = map[string]*trackSeen{}
			s.seen[w] = seen
		}
		stats := w.TrackStats()
		flowing := false
		for _, ts := range stats {
			if ts.Kind == mux.Text {
				continue // cues come seconds apart, or not at all
			}
			t := seen[ts.Name]
			switch {
			case t == nil:
				seen[ts.Name] = &trackSeen{received: ts.Received, changed: now}
				continue
			case ts.Received != t.received:
				if t.warned {
					log.Info("a track that received nothing receives again", "broadcast", broadcast, "track", ts.Name,
						"after", now.Sub(t.changed).Round(100*time.Millisecond))
				}
				t.received, t.changed, t.warned = ts.Received, now, false
			}
			if now.Sub(t.changed) < silentAfter {
				flowing = true
			}
		}
		if !flowing {
			continue // all quiet: a paused broadcast, an outage
		}
		for _, ts := range stats {
			t := seen[ts.Name]
			if t == nil || t.warned || ts.Kind == mux.Text || now.Sub(t.changed) < silentAfter {
				continue
			}
			st, ok := w.TrackState(ts.Name)
			if !ok || st.Ended {
				continue
			}
			t.warned = true
			log.Warn("a track receives nothing while the others of its broadcast do", "broadcast", broadcast, "track", ts.Name,
				"for", now.Sub(t.changed).Round(100*time.Millisecond), "received", ts.Received, "written", ts.Written,
				"late", ts.DroppedLate, "gaps", ts.Gaps, "source", describeSource(st), "reader", describeReaders(st))
		}
	}
}

// describeSource says what the source track holds.
func describeSource(st export.TrackState) string {
	var b strings.Builder
	if st.Groups == 0 {
		b.WriteString("no group")
	} else {
		fmt.Fprintf(&b, "groups %d-%d (%d held)", st.Oldest, st.Newest, st.Groups)
	}
	if st.Timelines > 0 {
		fmt.Fprintf(&b, ", timeline %d", st.Timelines+1)
	}
	if st.Held {
		b.WriteString(", held by its subscription (a gap being filled)")
	}
	return b.String()
}

// describeReaders says where the engine's reader stands.
func describeReaders(st export.TrackState) string {
	var parts []string
	for _, r := range st.Readers {
		switch {
		case r.Stale:
			parts = append(parts, "not yet on the new timeline")
		case !r.Started:
			parts = append(parts, "not started")
		case r.Waiting:
			parts = append(parts, fmt.Sprintf("waiting for group %d", r.Cursor))
		default:
			parts = append(parts, fmt.Sprintf("at group %d", r.Cursor))
		}
	}
	s := strings.Join(parts, "; ")
	if st.Aligning {
		s += " (held back to align with the video)"
	}
	return s
}

// watchSilence runs the silence check, and the behind check (behind.go),
// every silenceEvery until ctx ends.
func (r *Recorder) watchSilence(ctx context.Context) {
	if !r.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	var s silence
	var b behind
	t := time.NewTicker(silenceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.mu.Lock()
			running := make(map[watchedRecording]string, len(r.active))
			for ex, name := range r.active {
				running[ex] = name
			}
			r.mu.Unlock()
			s.check(r.log, now, running)
			b.check(r.log, now, running)
		}
	}
}
