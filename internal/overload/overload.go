package overload

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/transport"
)

// Thresholds, in packets a connection's goroutine may find queued: the
// recorder is overloaded from Enter on, and again fine once the backlog
// stayed below Leave for LeaveAfter samples.
const (
	Enter      = transport.QueuedPacketsPerConn / 2
	Leave      = transport.QueuedPacketsPerConn / 4
	LeaveAfter = 4
	// Interval is how often the Monitor samples.
	Interval = 250 * time.Millisecond
)

// Sample is what one interval showed.
type Sample struct {
	// Wait is the longest a runnable goroutine waited to run.
	Wait time.Duration
	// Rate is the busiest QUIC socket's received packets per second.
	Rate float64
}

// Backlog is how many packets a connection's goroutine could find queued:
// what arrives while it waits to run.
func (s Sample) Backlog() float64 { return s.Rate * s.Wait.Seconds() }

// Error is the reason a new recording is refused: the recorder is
// overloaded.
type Error struct {
	Sample
	Since time.Time
}

func (e *Error) Error() string {
	return fmt.Sprintf("the recorder is overloaded: goroutines waited up to %v to run while %.0f packets/s arrived, "+
		"so about %.0f packets can queue for a connection whose limit is %d (since %s)",
		e.Wait.Round(time.Microsecond), e.Rate, e.Backlog(), transport.QueuedPacketsPerConn, e.Since.UTC().Format(time.TimeOnly))
}

// Monitor watches the load; see the package doc. Its methods are safe for
// concurrent use.
type Monitor struct {
	log    *slog.Logger
	sample func() Sample

	mu       sync.Mutex
	last     Sample
	over     *Error // non-nil while overloaded
	calm     int    // samples below Leave in a row, while overloaded
	episodes int64
}

// New returns a Monitor logging to log (slog.Default() when nil) that
// reads the runtime and the sockets; Run samples them.
func New(log *slog.Logger) *Monitor {
	if log == nil {
		log = slog.Default()
	}
	r := newReader()
	return &Monitor{log: log, sample: r.read}
}

// Run samples every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	m.sample() // the baseline the first interval is measured from
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Observe(m.sample())
		}
	}
}

// Observe applies one sample, taken now: Run calls it every Interval; a
// supervisor with a measure of its own (or a test) may feed it instead.
func (m *Monitor) Observe(s Sample) { m.observe(s, time.Now()) }

func (m *Monitor) observe(s Sample, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = s
	backlog := s.Backlog()
	switch {
	case m.over == nil && backlog >= Enter:
		m.over = &Error{Sample: s, Since: now}
		m.episodes++
		m.log.Warn("overloaded: packets may soon be dropped; new recordings are refused until it passes",
			"scheduling_wait", s.Wait, "packets_per_s", int64(s.Rate), "backlog", int64(backlog), "queue", transport.QueuedPacketsPerConn)
	case m.over != nil && backlog >= Leave:
		m.calm = 0
		if backlog > m.over.Backlog() {
			m.over.Sample = s // the worst of the episode
		}
	case m.over != nil:
		m.calm++
		if m.calm >= LeaveAfter {
			m.log.Info("no longer overloaded; new recordings are accepted again", "lasted", now.Sub(m.over.Since).Round(time.Millisecond))
			m.over, m.calm = nil, 0
		}
	}
}

// Err returns an *Error while the recorder is overloaded, nil otherwise
// (and on a nil Monitor): the admission check of new recordings
// (record.Options.Admit).
func (m *Monitor) Err() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.over == nil {
		return nil
	}
	e := *m.over
	return &e
}

// State is what the metrics show.
type State struct {
	Overloaded bool
	Last       Sample // the latest sample
	Episodes   int64  // how many times the recorder became overloaded
}

// State returns the monitor's state now (zero on a nil Monitor).
func (m *Monitor) State() State {
	if m == nil {
		return State{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return State{Overloaded: m.over != nil, Last: m.last, Episodes: m.episodes}
}

// reader samples the runtime's scheduling latencies and the sockets'
// packet counts, each interval against the one before.
type reader struct {
	ms      []metrics.Sample
	prev    []uint64 // the histogram's counts at the last read
	packets map[uint64]uint64
	socks   []transport.SocketPackets
	at      time.Time
}

const schedLatencies = "/sched/latencies:seconds"

func newReader() *reader {
	return &reader{ms: []metrics.Sample{{Name: schedLatencies}}, packets: map[uint64]uint64{}}
}

func (r *reader) read() Sample {
	now := time.Now()
	var s Sample
	metrics.Read(r.ms)
	if r.ms[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := r.ms[0].Value.Float64Histogram()
		if len(r.prev) == len(h.Counts) {
			for i := len(h.Counts) - 1; i >= 0; i-- {
				if h.Counts[i] > r.prev[i] {
					upper := h.Buckets[i+1]
					if math.IsInf(upper, 1) {
						upper = h.Buckets[i]
					}
					s.Wait = time.Duration(upper * float64(time.Second))
					break
				}
			}
		}
		r.prev = append(r.prev[:0], h.Counts...)
	}
	r.socks = transport.ReceivedPackets(r.socks[:0])
	dt := now.Sub(r.at).Seconds()
	seen := make(map[uint64]uint64, len(r.socks))
	for _, sp := range r.socks {
		if before, ok := r.packets[sp.ID]; ok && dt > 0 {
			s.Rate = max(s.Rate, float64(sp.Packets-before)/dt)
		}
		seen[sp.ID] = sp.Packets
	}
	r.packets, r.at = seen, now
	return s
}
