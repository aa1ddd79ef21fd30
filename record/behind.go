package record

import (
	"log/slog"
	"time"
)

// Telling a recording that trails live.
//
// A file is written in order, so the live media that arrives while a
// reconnect fills the gap an outage left waits in memory until the gap is
// written: a recorder killed then loses it with the last second (the
// eighth one-hour soak lost 3.55 s to a kill 36 s after a 37 s outage,
// whose 1,770 groups per audio track were still being fetched). Each
// recording measures how far its written position trails live
// (export.Export.Behind: the newest frame time received on each track
// less the newest written); every second the recorder looks, logs a
// recording that trails by more than behindAfter once as a warning, and
// again, at info, once it trails by less than caughtUpUnder: how long it
// was behind and by how much at worst. Stats.Behind is the figure itself.

// behindAfter is how far a recording may trail live before it is logged
// as behind (the soak's bound on a kill's loss: more than that would be
// lost with a kill); caughtUpUnder is how close it must come again to be
// logged as caught up (below the bound, so that a recording near it is
// not logged at every look). Tests may change them.
var (
	behindAfter   = 2 * time.Second
	caughtUpUnder = time.Second
)

// behind remembers the recordings logged as behind.
type behind struct {
	since map[watchedRecording]*behindSpell
}

// behindSpell is a recording's time behind live.
type behindSpell struct {
	since time.Time
	worst time.Duration
}

// check looks at the recordings running now (broadcast by recording).
func (b *behind) check(log *slog.Logger, now time.Time, running map[watchedRecording]string) {
	if b.since == nil {
		b.since = map[watchedRecording]*behindSpell{}
	}
	for w := range b.since {
		if _, ok := running[w]; !ok {
			delete(b.since, w)
		}
	}
	for w, broadcast := range running {
		d := w.Behind()
		spell := b.since[w]
		switch {
		case spell == nil && d > behindAfter:
			b.since[w] = &behindSpell{since: now, worst: d}
			log.Warn("a recording falls behind live: media it received is not written yet, and a kill would lose it",
				"broadcast", broadcast, "behind", d.Round(100*time.Millisecond))
		case spell == nil:
		case d < caughtUpUnder:
			delete(b.since, w)
			log.Info("a recording caught up with live", "broadcast", broadcast,
				"after", now.Sub(spell.since).Round(100*time.Millisecond),
				"worst", max(spell.worst, d).Round(100*time.Millisecond), "behind", d.Round(100*time.Millisecond))
		default:
			spell.worst = max(spell.worst, d)
		}
	}
}
