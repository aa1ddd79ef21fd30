package soak

import (
	"testing"
	"time"
)

// The soak measures each fault's loss as the largest hole in the touched
// recordings' packet times that begins inside the fault's window. The
// window must not reach into the next fault's own hole: soak 2 (session
// 10) blamed a 22.7 s blip for the hole of a recorder kill that came 6 s
// after it, because the recorder, writing behind live, lost its last
// second before the kill inside the blip's 5 s of recovery.
func TestTheSoakWindowOfAFaultStopsBeforeTheNextFaultsHole(t *testing.T) {
	epoch := time.Unix(1_000_000, 0)
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	lite := &soakPublisher{name: "lite"}
	ietf := &soakPublisher{name: "ietf"}
	mp4 := &soakRecorder{name: "mp4/ietf", pub: ietf}
	mkv := &soakRecorder{name: "mkv/lite", pub: lite}
	blip := &soakFault{kind: "blip", target: "ietf", start: at(1248.1), end: at(1270.8)}
	tests := []struct {
		name   string
		faults []*soakFault
		rec    *soakRecorder
		want   float64
	}{
		{"a fault alone is searched until 5 s after it", []*soakFault{blip}, mp4, 1275.8},
		{"a recorder kill 6 s later ends the window 3 s before the kill",
			[]*soakFault{blip, {kind: "recorder kill", target: "mp4/ietf", start: at(1276.8), end: at(1276.9)}}, mp4, 1273.8},
		{"a kill of a recorder the fault does not touch changes nothing",
			[]*soakFault{blip, {kind: "recorder kill", target: "mkv/lite", start: at(1276.8), end: at(1276.9)}}, mp4, 1275.8},
		{"a blip of the same publisher 2 s later ends the window at its start",
			[]*soakFault{blip, {kind: "blip", target: "ietf", start: at(1272.8), end: at(1280)}}, mp4, 1272.8},
		{"a full disk right after the fault still leaves the fault's own span",
			[]*soakFault{blip, {kind: "disk full", target: "mp4/ietf", start: at(1271.0), end: at(1276)}}, mp4, 1270.8},
		{"a publisher restart elsewhere does not touch the recorder", []*soakFault{blip,
			{kind: "publisher restart", target: "lite", start: at(1272), end: at(1275)}}, mp4, 1275.8},
		{"a later fault is found past one that does not touch the recorder", []*soakFault{
			{kind: "blip", target: "lite", start: at(10), end: at(20)},
			{kind: "recorder kill", target: "mp4/ietf", start: at(21), end: at(21.1)},
			{kind: "recorder kill", target: "mkv/lite", start: at(22), end: at(22.1)}}, mkv, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := soakWindowEnd(tc.faults, 0, tc.rec, epoch)
			if d := got - tc.want; d > 1e-6 || d < -1e-6 {
				t.Errorf("window ends at %.3f s, want %.3f s", got, tc.want)
			}
		})
	}
}
