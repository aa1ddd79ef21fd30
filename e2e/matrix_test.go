package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The dimensions of the matrix. A new value is one row here; the case list
// (cases) takes the full product of the newest version of each family and
// pairwise coverage of everything else, so every pair of values of any
// two dimensions is recorded at least once.

// version is a wire protocol version as subscribe.Options.Versions names
// it, with what the matrix expects of it.
type version struct {
	name string
	// fetch: the version can FETCH past groups, so a live join backfills
	// the audio before the video's keyframe and a resume fills the groups
	// an outage missed. Without it both leave a gap, which the checks
	// allow.
	fetch bool
	// newest marks the newest version of its family: it gets the full
	// product of packagings, containers, roles and transports.
	newest bool
	// connections: the version is recorded in both roles over both
	// transports (a version whose negotiation is new, such as draft 21,
	// which is draft 20 on the wire under its own ALPN and
	// WebTransport protocol).
	connections bool
}

var versions = []version{
	{name: "moq-lite-06", fetch: true, newest: true},
	{name: "moq-lite-05", fetch: true},
	{name: "moq-lite-04"},
	{name: "moq-lite-03"},
	{name: "moq-transport-22", fetch: true, newest: true},
	{name: "moq-transport-21", fetch: true, connections: true},
	{name: "moq-transport-20", fetch: true},
	{name: "moq-transport-19", fetch: true},
	{name: "moq-transport-18", fetch: true},
	{name: "moq-transport-17", fetch: true},
	{name: "moq-transport-16", fetch: true},
	{name: "moq-transport-15", fetch: true},
	{name: "moq-transport-14", fetch: true},
}

// packagings are the hang payload packagings the demo publishes
// (catalog.ContainerKind values).
var packagings = []string{"legacy", "loc", "cmaf"}

// containers are the record formats (file extensions); keepBytes: the
// container keeps the codec payload bytes as published (MPEG-TS carries
// H.264 as Annex B and AAC with ADTS headers); rebased: it starts every
// file at 0 (record.Options.KeepTimestamps does not apply).
var containers = []struct {
	name               string
	keepBytes, rebased bool
}{
	{"flv", true, false},
	{"mkv", true, false},
	{"ts", false, false},
	{"mp4", true, true},
	// An HLS package (mux/hls): rec.m3u8 is its multivariant playlist,
	// which ffmpeg reads with every rendition's CMAF segments.
	{"m3u8", true, true},
}

// roles: who opens the connection.
const (
	roleDial   = "dial"   // the recorder dials the publisher
	roleAccept = "accept" // the publisher dials the recorder's listener
)

var roles = []string{roleDial, roleAccept}

// paths: how the recorded media reaches the file.
const (
	// pathLive joins the running broadcast and records what comes.
	pathLive = "live"
	// pathFetch is a live join that must reach back with FETCH: the
	// audio before the video's keyframe comes from past groups.
	pathFetch = "fetch"
	// pathResume cuts the network for a while mid-recording: the
	// recording goes on after it, the missed groups fetched.
	pathResume = "resume"
	// pathMarkers joins a broadcast published with hang's empty-payload
	// markers (demo.Options.Markers): an end marker closes every video
	// group, and every 2 s each track has a discontinuity marker group.
	// No marker may reach the file, and every track's timeline breaks
	// there and goes on.
	pathMarkers = "markers"
)

var paths = []string{pathLive, pathFetch, pathResume, pathMarkers}

// transports: what carries the session. Raw QUIC (moql://), negotiated by
// ALPN, and WebTransport over HTTP/3 (https://), negotiated by
// WT-Available-Protocols, are separate code paths in both roles.
const (
	transportQUIC         = "quic"
	transportWebTransport = "webtransport"
)

var transports = []string{transportQUIC, transportWebTransport}

// scheme is the URL scheme that dials over transport.
func scheme(transport string) string {
	if transport == transportWebTransport {
		return "https"
	}
	return "moql"
}

// matrixCase is one recording.
type matrixCase struct {
	version   version
	packaging string
	container string
	keepBytes bool
	rebased   bool
	role      string
	path      string
	transport string
}

// broadcast is the name of the broadcast the case records.
func (c matrixCase) broadcast() string {
	if c.path == pathMarkers {
		return broadcastName(c.packaging + "-" + pathMarkers)
	}
	return broadcastName(c.packaging)
}

// String names the case; a raw QUIC case keeps the name it had before
// the transport was a dimension.
func (c matrixCase) String() string {
	name := strings.Join([]string{c.version.name, c.packaging, c.container, c.role, c.path}, "/")
	if c.transport != transportQUIC {
		name += "/" + c.transport
	}
	return name
}

// cases returns the matrix: the full product for the newest versions
// (live, over both transports), then cases added until every pair of
// values of two dimensions occurs in some case.
func cases() []matrixCase {
	dims := [][]string{nil, packagings, nil, roles, paths, transports}
	for _, v := range versions {
		dims[0] = append(dims[0], v.name)
	}
	for _, c := range containers {
		dims[2] = append(dims[2], c.name)
	}
	var rows [][]int
	for vi, v := range versions {
		if !v.newest {
			continue
		}
		for pi := range packagings {
			for ci := range containers {
				for ri := range roles {
					for ti := range transports {
						rows = append(rows, []int{vi, pi, ci, ri, 0, ti})
					}
				}
			}
		}
	}
	// The markers path for the newest versions in every packaging and
	// container: no marker reaches any muxer.
	for vi, v := range versions {
		if !v.newest {
			continue
		}
		for pi := range packagings {
			for ci := range containers {
				rows = append(rows, []int{vi, pi, ci, 0, slices.Index(paths, pathMarkers), 0})
			}
		}
	}
	// Both roles over both transports for the versions that ask for it.
	for vi, v := range versions {
		if !v.connections || v.newest {
			continue
		}
		for ri := range roles {
			for ti := range transports {
				k := ri*len(transports) + ti
				rows = append(rows, []int{vi, k % len(packagings), k % len(containers), ri, 0, ti})
			}
		}
	}
	rows = pairwise(dims, rows)
	out := make([]matrixCase, 0, len(rows))
	for _, r := range rows {
		out = append(out, matrixCase{
			version: versions[r[0]], packaging: packagings[r[1]],
			container: containers[r[2]].name, keepBytes: containers[r[2]].keepBytes,
			rebased: containers[r[2]].rebased,
			role:    roles[r[3]], path: paths[r[4]], transport: transports[r[5]],
		})
	}
	return out
}

// pairwise adds rows to seed until every pair of values of two dimensions
// appears in a row (a greedy covering array: deterministic, near minimal).
func pairwise(dims [][]string, seed [][]int) [][]int {
	type pair struct{ d1, v1, d2, v2 int }
	uncovered := map[pair]bool{}
	for d1 := range dims {
		for d2 := d1 + 1; d2 < len(dims); d2++ {
			for v1 := range dims[d1] {
				for v2 := range dims[d2] {
					uncovered[pair{d1, v1, d2, v2}] = true
				}
			}
		}
	}
	cover := func(r []int) {
		for d1 := range r {
			for d2 := d1 + 1; d2 < len(r); d2++ {
				delete(uncovered, pair{d1, r[d1], d2, r[d2]})
			}
		}
	}
	gain := func(r []int) int {
		n := 0
		for d1 := range r {
			for d2 := d1 + 1; d2 < len(r); d2++ {
				if r[d1] >= 0 && r[d2] >= 0 && uncovered[pair{d1, r[d1], d2, r[d2]}] {
					n++
				}
			}
		}
		return n
	}
	rows := slices.Clone(seed)
	for _, r := range rows {
		cover(r)
	}
	for len(uncovered) > 0 {
		// Start from the first uncovered pair (in a fixed order), then
		// give each other dimension the value that covers most.
		var first pair
		firstSet := false
		for p := range uncovered {
			if !firstSet || fmt.Sprint(p) < fmt.Sprint(first) {
				first, firstSet = p, true
			}
		}
		r := make([]int, len(dims))
		for i := range r {
			r[i] = -1
		}
		r[first.d1], r[first.d2] = first.v1, first.v2
		for d := range dims {
			if r[d] >= 0 {
				continue
			}
			best, bestGain := 0, -1
			for v := range dims[d] {
				r[d] = v
				if g := gain(r); g > bestGain {
					best, bestGain = v, g
				}
			}
			r[d] = best
		}
		cover(r)
		rows = append(rows, r)
	}
	return rows
}

// TestTheMatrixCoversEveryPairOfDimensionValues checks the case list
// itself: the full product for the newest versions, both roles over both
// transports where a version asks for it, and every pair.
func TestTheMatrixCoversEveryPairOfDimensionValues(t *testing.T) {
	cs := cases()
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.String()] {
			t.Errorf("case %s twice", c)
		}
		seen[c.String()] = true
	}
	for _, v := range versions {
		if !v.newest {
			continue
		}
		for _, p := range packagings {
			for _, c := range containers {
				for _, r := range roles {
					for _, tr := range transports {
						name := matrixCase{version: v, packaging: p, container: c.name, role: r, path: pathLive, transport: tr}.String()
						if !seen[name] {
							t.Errorf("no case %s", name)
						}
					}
				}
				if !seen[strings.Join([]string{v.name, p, c.name, roleDial, pathMarkers}, "/")] {
					t.Errorf("no case %s/%s/%s/dial/markers", v.name, p, c.name)
				}
			}
		}
	}
	connections := map[string]bool{}
	for _, c := range cs {
		connections[c.version.name+" "+c.role+" "+c.transport] = true
	}
	for _, v := range versions {
		if !v.newest && !v.connections {
			continue
		}
		for _, r := range roles {
			for _, tr := range transports {
				if !connections[v.name+" "+r+" "+tr] {
					t.Errorf("no case of %s with role %s over %s", v.name, r, tr)
				}
			}
		}
	}
	values := func(c matrixCase) []string {
		return []string{c.version.name, c.packaging, c.container, c.role, c.path, c.transport}
	}
	pairs := map[string]bool{}
	for _, c := range cs {
		v := values(c)
		for i := range v {
			for j := i + 1; j < len(v); j++ {
				pairs[fmt.Sprint(i, v[i], j, v[j])] = true
			}
		}
	}
	dims := [][]string{nil, packagings, nil, roles, paths, transports}
	for _, v := range versions {
		dims[0] = append(dims[0], v.name)
	}
	for _, c := range containers {
		dims[2] = append(dims[2], c.name)
	}
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			for _, a := range dims[i] {
				for _, b := range dims[j] {
					if !pairs[fmt.Sprint(i, a, j, b)] {
						t.Errorf("no case with %s and %s", a, b)
					}
				}
			}
		}
	}
	t.Logf("%d cases", len(cs))
}

// TestEveryProtocolPackagingContainerRoleAndPathRecordsWhatWasPublished is
// the matrix: each case records ~2.5 s of the demo broadcast and checks the
// file (see check).
func TestEveryProtocolPackagingContainerRoleAndPathRecordsWhatWasPublished(t *testing.T) {
	r := newRig(t)
	for _, c := range cases() {
		t.Run(strings.ReplaceAll(c.String(), "/", "_"), func(t *testing.T) {
			t.Parallel()
			res := r.record(t, c)
			// A machine stalled past the timeouts makes a case
			// record another path than the one it names; such an
			// attempt is made again (at most four times; under the
			// race detector, which stalls every case, not at all),
			// never one whose file is wrong. If the last one still
			// missed its path, its file is checked all the same, as
			// what happened allows. A case that recorded nothing (no
			// connection, a recording cut short by a timeout) checked
			// nothing: it is made again also under the race detector,
			// and if the last attempt fails too, the case fails. So is
			// a disturbed one in which a track received no frame at all
			// before the recording ended (under -race at load 24, the
			// audio of a FETCH case once came only after the end): it
			// checked nothing of that track.
			attempts, failedAttempts := 5, 5
			if raceEnabled {
				attempts, failedAttempts = 1, 3
			}
			why := disturbed(c, res)
			for attempt := 1; why != "" && (attempt < attempts || ((res.err != nil || silentTrack(res) != "") && attempt < failedAttempts)); attempt++ {
				t.Logf("attempt %d: %s; recording again", attempt, why)
				res = r.record(t, c)
				why = disturbed(c, res)
			}
			if res.err != nil {
				t.Fatalf("recording failed (%s): %v\n%s", why, res.err, res.tails())
			}
			if why != "" {
				t.Logf("the last attempt too: %s; checking its file, not its path", why)
				if silent := silentTrack(res); silent != "" {
					t.Logf("%s", silent)
				}
			}
			check(t, c, res, why != "")
		})
	}
}

// silentTrack says which track of the recording received no frame at all,
// or "" when each received some.
func silentTrack(res result) string {
	for _, tr := range res.tracks {
		if tr.Received == 0 {
			return fmt.Sprintf("track %s received no frame before the recording ended", tr.Track)
		}
	}
	return ""
}
