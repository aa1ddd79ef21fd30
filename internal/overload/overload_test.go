package overload

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/transport"
)

// at is a sample whose backlog is n packets: 100,000 packets a second
// (1,000 recordings of about 1 Mb/s on one connection) and the wait that
// lets n of them queue.
func at(n int) Sample {
	return Sample{Rate: 100_000, Wait: time.Duration(n) * 10 * time.Microsecond}
}

// TestTheMonitorSaysOverloadedAtHalfTheQueueAndRecoversBelowAQuarter: the
// thresholds follow from quic-go's queue of 256 packets a connection: a
// backlog of 128 (1.28 ms of waiting at 100,000 packets/s) is overload,
// logged at once with what was measured, and Err refuses; one packet less
// is not. It passes once the backlog stayed under 64 for LeaveAfter
// samples in a row; a sample at or above 64 starts that count over.
func TestTheMonitorSaysOverloadedAtHalfTheQueueAndRecoversBelowAQuarter(t *testing.T) {
	if Enter != 128 || Leave != 64 || transport.QueuedPacketsPerConn != 256 {
		t.Fatalf("thresholds %d/%d of a queue of %d", Enter, Leave, transport.QueuedPacketsPerConn)
	}
	var logs bytes.Buffer
	m := &Monitor{log: slog.New(slog.NewTextHandler(&logs, nil))}
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	step := func(s Sample) {
		now = now.Add(Interval)
		m.observe(s, now)
	}
	step(at(127))
	if err := m.Err(); err != nil || m.State().Overloaded || logs.Len() != 0 {
		t.Fatalf("a backlog of 127 is overload: %v\n%s", err, &logs)
	}
	step(at(128))
	err := m.Err()
	var oe *Error
	if !errors.As(err, &oe) || !m.State().Overloaded || m.State().Episodes != 1 {
		t.Fatalf("a backlog of 128 is not overload: %v %+v", err, m.State())
	}
	if got := oe.Backlog(); got < 127.9 || got > 128.1 {
		t.Fatalf("backlog %f", got)
	}
	for _, want := range []string{"level=WARN", "overloaded", "new recordings are refused", "backlog=128", "queue=256", "packets_per_s=100000"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the warning lacks %q:\n%s", want, &logs)
		}
	}
	if !strings.Contains(err.Error(), "overloaded") || !strings.Contains(err.Error(), "limit is 256") {
		t.Fatalf("Err says %q", err)
	}
	step(at(300))
	if oe, _ := m.Err().(*Error); oe == nil || oe.Backlog() < 299 {
		t.Fatalf("the episode's error does not keep its worst sample: %v", m.Err())
	}
	for i := range LeaveAfter - 1 {
		step(at(63))
		if m.Err() == nil {
			t.Fatalf("recovered after %d calm samples", i+1)
		}
	}
	step(at(64)) // not calm: the count starts over
	for range LeaveAfter - 1 {
		step(at(10))
	}
	if m.Err() == nil {
		t.Fatal("recovered although a sample at the Leave threshold came between the calm ones")
	}
	step(at(10))
	if err := m.Err(); err != nil || m.State().Overloaded {
		t.Fatalf("still overloaded after %d calm samples: %v", LeaveAfter, err)
	}
	if !strings.Contains(logs.String(), "no longer overloaded") {
		t.Fatalf("the recovery is not logged:\n%s", &logs)
	}
	step(at(200))
	if m.State().Episodes != 2 {
		t.Fatalf("episodes %d, want 2", m.State().Episodes)
	}
}

// TestAnIdleRecorderIsNeverOverloaded: however long goroutines wait, no
// packets arriving means none can queue.
func TestAnIdleRecorderIsNeverOverloaded(t *testing.T) {
	m := &Monitor{log: slog.New(slog.DiscardHandler)}
	m.observe(Sample{Wait: time.Minute}, time.Now())
	if m.Err() != nil {
		t.Fatal("overloaded without packets")
	}
}

// TestTheReaderMeasuresTheSchedulingWaitOfTheInterval: between two reads
// the runtime's histogram of scheduling latencies grows; the reader gives
// the longest wait of the interval (an upper bucket bound: positive and
// finite), and nothing from the interval before.
func TestTheReaderMeasuresTheSchedulingWaitOfTheInterval(t *testing.T) {
	r := newReader()
	if s := r.read(); s.Wait != 0 || s.Rate != 0 {
		t.Fatalf("the first read has no interval to measure: %+v", s)
	}
	done := make(chan struct{})
	for range 8 { // goroutines that become runnable, and so are measured
		go func() {
			for range 100 {
				time.Sleep(time.Microsecond)
			}
			done <- struct{}{}
		}()
	}
	for range 8 {
		<-done
	}
	s := r.read()
	if s.Wait <= 0 || s.Wait > time.Minute {
		t.Fatalf("wait %v", s.Wait)
	}
}
