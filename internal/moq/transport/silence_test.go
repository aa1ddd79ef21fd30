package transport

import (
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestSilenceTimeoutGrowsWithTheMeasuredRTT: a silent peer is found after
// the keep-alive (or 1.5 PTOs) and then the idle timeout (or 3 PTOs), the
// PTO being what the RTT estimate makes it. On loopback that is the
// configured times; one slow first sample (a handshake on a starved
// machine: srtt 1 s, deviation half of it) makes a 500 ms idle timeout
// 13.6 s, longer than a fixed 10 s wait for it (the subscribe outage rig's
// until it asked this).
func TestSilenceTimeoutGrowsWithTheMeasuredRTT(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name          string
		stats         quic.ConnectionStats
		keepAlive     time.Duration
		idle, silence time.Duration
	}{
		{"before any RTT sample", quic.ConnectionStats{}, 100 * ms, 500 * ms, 300*ms + 600*ms},
		{"loopback", quic.ConnectionStats{SmoothedRTT: ms, MeanDeviation: ms / 2}, 100 * ms, 500 * ms, 600 * ms},
		{"loopback, the recorder's settings", quic.ConnectionStats{SmoothedRTT: ms, MeanDeviation: ms / 2}, time.Second, 3 * time.Second, 4 * time.Second},
		{"a first sample of 1 s", quic.ConnectionStats{SmoothedRTT: time.Second, MeanDeviation: 500 * ms}, 100 * ms, 500 * ms, 4537500*time.Microsecond + 9075*ms},
		{"a first sample of 1 s, the recorder's settings", quic.ConnectionStats{SmoothedRTT: time.Second, MeanDeviation: 500 * ms}, time.Second, 3 * time.Second, 4537500*time.Microsecond + 9075*ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := silence(tc.keepAlive, tc.idle, ptoOf(tc.stats)); got != tc.silence {
				t.Errorf("silence after %v with keep-alive %v, idle timeout %v: %v, want %v", tc.stats, tc.keepAlive, tc.idle, got, tc.silence)
			}
		})
	}
}

// TestSilenceTimeoutOfAnotherConnIsItsSettings: a connection that is not
// raw QUIC (WebTransport, a test's) is given its keep-alive and idle
// timeout.
func TestSilenceTimeoutOfAnotherConnIsItsSettings(t *testing.T) {
	var other struct{ Conn }
	if got := SilenceTimeout(other, time.Second, 3*time.Second); got != 4*time.Second {
		t.Errorf("SilenceTimeout = %v, want 4s", got)
	}
}
