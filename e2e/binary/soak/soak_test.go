package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"golang.org/x/sys/unix"
)

// The chaos soak (issue 26): publishers of several broadcasts (legacy, loc
// and cmaf), one speaking moq-lite, one IETF moq-transport (draft 22) and
// one moq-transport draft 16 that refuses every FETCH (NOT_SUPPORTED, as
// the reference publisher does: its gaps are filled by span subscriptions),
// each behind a loopback UDP proxy, recorded by --record-all processes into
// every container (MKV and TS over moq-lite, MP4 and FLV over
// moq-transport, MKV over the publisher without FETCH),
// for MOQ_SOAK_DURATION (default 75 s; scripts/soak.sh runs it for an
// hour; MOQ_SOAK_LOGS names a directory for each recorder run's log),
// while faults come one at a time, at random, with calm between them:
//
//   - blip: a proxy drops everything for 1-60 s (at most a tenth of the
//     run); the publisher keeps its groups, so nothing may be lost;
//   - publisher restart: a publisher is SIGKILLed and started again on its
//     port 1-5 s later (same clock): the hole is at most the outage + 3 s;
//   - recorder kill: a recorder is SIGKILLed and started again into new
//     files; the old ones decode and hold the media up to about a second
//     before the kill (2 s of the publishers' clock; MP4, which keeps whole
//     fragments, 3 s);
//   - disk full: a recorder is restarted with a file size limit that its
//     files reach within seconds (what a full disk looks like to a
//     writer); each recording must stop naming the failed write and leave
//     a file that decodes; then the limit is lifted (the disk has room
//     again) and --record-all must start each recording again by itself,
//     into new files: the hole is at most the fault plus 3 s.
//
// Before each fault the soak waits (up to 90 s, a fifth of a short run)
// until the recorders it touches record every broadcast within a second of
// live (each recorder's control API, --http: behind_seconds), so that each
// fault's loss is measured from steady state. Right before a recorder is
// killed (a kill or a full disk) it reads how far each recording trails
// live, and the bound is checked against the kill's own part: a track's
// loss less that (the live media held behind a gap fill is the recovery's).
//
// At the end every file decodes, the table of faults and losses is
// printed (t.Log, and MOQ_SOAK_TABLE names a file for it), and a loss over
// its bound fails the test. Losses are measured in the files' own packet
// times (--keep-timestamps: the publishers' clock, which is wall time since
// the soak began), so what each fault cost is read from what was recorded;
// a finished MP4 starts at its first frame, so where each MP4 of the last
// runs starts is read from its fragments before the finish (filePackets).
// MOQ_SOAK_KEEP names a directory where the recordings stay.

// soakTouches says whether fault f can cost recorder r media.
func soakTouches(f *soakFault, r *soakRecorder) bool {
	if f.kind == "blip" || f.kind == "publisher restart" {
		return r.pub.name == f.target
	}
	return r.name == f.target
}

// soakWindowEnd is where the search for the hole of faults[i] in r's
// files ends, in seconds since epoch: 5 s after the fault (the recovery),
// but never into the next fault that touches r. A recorder kill's or a
// full disk's hole begins up to its bound (3 s) before the kill, since the
// recorder writes behind live, so the window stops that much earlier; it
// never ends before the fault itself has.
func soakWindowEnd(faults []*soakFault, i int, r *soakRecorder, epoch time.Time) float64 {
	at := func(ts time.Time) float64 { return ts.Sub(epoch).Seconds() }
	f := faults[i]
	end := at(f.end) + 5
	for _, n := range faults[i+1:] {
		if !soakTouches(n, r) {
			continue
		}
		next := at(n.start)
		if n.kind == "recorder kill" || n.kind == "disk full" {
			next -= 3
		}
		return max(at(f.end), min(end, next))
	}
	return end
}

type soakPublisher struct {
	name     string
	versions string
	noFetch  bool // refuses every FETCH: gaps are filled by span subscriptions
	proc     *cmdtest.PublisherProcess
	proxy    *udpproxy.Proxy
}

type soakRecorder struct {
	name string
	ext  string
	pub  *soakPublisher
	dir  string
	runs int // output directories run0, run1, ...
	cmd  *exec.Cmd
	log  cmdtest.LockedBuffer
}

// soakFault is one injected fault and what it cost.
type soakFault struct {
	kind   string // blip, publisher restart, recorder kill, disk full
	target string
	start  time.Time
	end    time.Time // the fault over: network back, publisher listening, recorder restarted
	note   string
	loss   time.Duration // of the worst track it touched (the one whose own part is the most)
	bound  time.Duration // -1: none
	worst  string        // which track
	// waited is how long the soak waited before the fault for the
	// recorders it touches to catch up with live (waitTimedOut: they had
	// not within the wait's limit).
	waited       time.Duration
	waitTimedOut bool
	// behind is, for a fault that kills a recorder, how far each of its
	// recordings trailed live at the kill (by broadcast; nil when its API
	// did not answer); behindWorst that of the worst track's broadcast,
	// and own the worst track's loss less it: the kill's own part, which
	// the bound is about (the rest, the live media held behind a gap
	// fill, is the recovery's).
	behind      map[string]float64
	behindWorst time.Duration
	own         time.Duration
}

func TestChaosSoak(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe", "sh")
	t.Parallel()
	duration := 75 * time.Second
	if v := os.Getenv("MOQ_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("MOQ_SOAK_DURATION: %v", err)
		}
		duration = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("MOQ_SOAK_KEEP"); keep != "" {
		// The recordings stay there for a look after the run.
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	certFile, keyFile, pin := cmdtest.PublisherCert(t, dir)
	epoch := time.Now()
	env := func(p *soakPublisher) []string {
		e := []string{"MOQ_EXPORT_TEST_BROADCASTS=" + cmdtest.SoakBroadcasts, "MOQ_EXPORT_TEST_KEEP=4000"}
		if p.versions != "" {
			e = append(e, "MOQ_EXPORT_TEST_VERSIONS="+p.versions)
		}
		if p.noFetch {
			e = append(e, "MOQ_EXPORT_TEST_NOFETCH=1")
		}
		return e
	}
	pubs := []*soakPublisher{{name: "lite"}, {name: "ietf", versions: "moq-transport-22"},
		{name: "ietf-nofetch", versions: "moq-transport-16", noFetch: true}}
	for _, p := range pubs {
		p.proc = cmdtest.StartPublisher(t, ctx, "127.0.0.1:0", certFile, keyFile, epoch, env(p)...)
		px, err := udpproxy.New(p.proc.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		p.proxy = px
	}
	recs := []*soakRecorder{
		{name: "mkv/lite", ext: "mkv", pub: pubs[0]},
		{name: "ts/lite", ext: "ts", pub: pubs[0]},
		{name: "mp4/ietf", ext: "mp4", pub: pubs[1]},
		{name: "flv/ietf", ext: "flv", pub: pubs[1]},
		{name: "mkv/ietf-nofetch", ext: "mkv", pub: pubs[2]},
	}
	start := func(r *soakRecorder, limitBlocks int) {
		t.Helper()
		out := filepath.Join(r.dir, fmt.Sprintf("run%d", r.runs))
		r.runs++
		args := []string{"moql://" + r.pub.proxy.Addr() + "/", "--tls-fingerprint", pin, "--record-all",
			"--keep-timestamps", "-v", "--log-time", "--http", "127.0.0.1:0", "-o", filepath.Join(out, "{broadcast}."+r.ext)}
		if limitBlocks > 0 {
			// The soft limit only, so that it can be lifted again.
			r.cmd = proctest.CommandContext(ctx, "sh", append([]string{"-c", fmt.Sprintf(`ulimit -S -f %d && exec "$0" "$@"`, limitBlocks), cmdtest.Binary}, args...)...)
		} else {
			r.cmd = proctest.CommandContext(ctx, cmdtest.Binary, args...)
		}
		keepLog(t, r, r.runs-2) // the run before this one
		r.log = cmdtest.LockedBuffer{}
		r.cmd.Stderr = &r.log
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		r.dir = filepath.Join(dir, strings.ReplaceAll(r.name, "/", "-"))
		start(r, 0)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			if r.cmd.ProcessState == nil {
				r.cmd.Process.Kill()
				r.cmd.Wait()
			}
		}
	})

	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	rng := rand.New(rand.NewPCG(uint64(epoch.UnixNano()), 26))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	// 1-60 s, at most a tenth of the run: a short run (CI) keeps to blips
	// of a few seconds, those under the 3 s idle timeout (no reconnect:
	// QUIC retransmits what the blackhole swallowed) and those over it
	// (a reconnect and a gap fill).
	maxBlip := min(60*time.Second, duration/10)
	const minBlip = time.Second
	var faults []*soakFault
	deadline := epoch.Add(duration)
	sleep(8 * time.Second) // every recording under way
	// Before a fault, the recorders it touches catch up with live (each
	// fault's loss is then measured from steady state): up to 90 s, a fifth
	// of a short run.
	maxWait := min(90*time.Second, duration/5)
	for kinds := rng.Perm(4); ; kinds = rng.Perm(4) {
		for _, k := range kinds {
			if time.Until(deadline) < 12*time.Second {
				goto done
			}
			f := &soakFault{bound: -1}
			// The target first: the recorders the fault touches.
			var p *soakPublisher
			var r *soakRecorder
			var touched []*soakRecorder
			if k < 2 {
				p = pubs[rng.IntN(len(pubs))]
				for _, r := range recs {
					if r.pub == p {
						touched = append(touched, r)
					}
				}
			} else {
				r = recs[rng.IntN(len(recs))]
				touched = []*soakRecorder{r}
			}
			f.waited, f.waitTimedOut = soakWaitCaughtUp(ctx, touched, min(maxWait, max(0, time.Until(deadline)-12*time.Second)))
			if time.Until(deadline) < 12*time.Second {
				goto done
			}
			switch k {
			case 0:
				d := min(between(minBlip, max(minBlip, maxBlip)), time.Until(deadline)-10*time.Second)
				if d < minBlip {
					// The run's end would cut the blip below the shortest
					// one this run draws: draw another fault instead.
					continue
				}
				f.kind, f.target, f.bound = "blip", p.name, 0
				f.start = time.Now()
				p.proxy.Blackhole(true)
				sleep(d)
				p.proxy.Blackhole(false)
				f.end = time.Now()
			case 1:
				f.kind, f.target = "publisher restart", p.name
				f.start = time.Now()
				p.proc.Cmd.Process.Kill()
				p.proc.Cmd.Wait()
				sleep(between(time.Second, 5*time.Second))
				p.proc = cmdtest.StartPublisher(t, ctx, p.proc.Addr, certFile, keyFile, epoch, env(p)...)
				f.end = time.Now()
				f.bound = f.end.Sub(f.start) + 3*time.Second
			case 2:
				f.kind, f.target = "recorder kill", r.name
				// What is written reaches the file within 500 ms, and the
				// recorder writes about 500 ms behind live (the jitter
				// buffer's delay): about a second before the kill, 2 s
				// with room for a loaded machine; MP4 keeps whole
				// fragments (a 1 s GOP) on top.
				f.bound = 2 * time.Second
				if r.ext == "mp4" {
					f.bound = 3 * time.Second
				}
				f.behind = soakBehind(r) // what the kill finds held behind a gap fill
				f.start = time.Now()
				r.cmd.Process.Signal(syscall.SIGKILL)
				r.cmd.Wait()
				start(r, 0)
				f.end = time.Now()
				f.note = fmt.Sprintf("run%d", r.runs-2)
			case 3:
				f.kind, f.target = "disk full", r.name
				f.behind = soakBehind(r)
				f.start = time.Now()
				r.cmd.Process.Signal(syscall.SIGKILL)
				r.cmd.Wait()
				// 200 blocks of 512 bytes: a few seconds of a broadcast.
				start(r, 200)
				// Each recording stops at its failed write, naming it;
				// once all three have, the disk has room again (the limit
				// is lifted) and --record-all starts each again into new
				// files by itself.
				f.note = fmt.Sprintf("run%d", r.runs-1)
				if !waitForBroadcasts(ctx, r, 0, "recording failed (broadcast=") {
					t.Errorf("disk full on %s: not every recording said its write failed\n%s", r.name, r.log.String())
				}
				lifted := len(r.log.String())
				var lim unix.Rlimit
				if err := unix.Prlimit(r.cmd.Process.Pid, unix.RLIMIT_FSIZE, nil, &lim); err != nil {
					t.Fatalf("reading the file size limit: %v", err)
				}
				lim.Cur = lim.Max
				if err := unix.Prlimit(r.cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
					t.Fatalf("lifting the file size limit: %v", err)
				}
				if !waitForBroadcasts(ctx, r, lifted, "restarting a recording a full disk ended (broadcast=") {
					t.Errorf("disk full on %s: not every recording was restarted once the disk had room\n%s", r.name, r.log.String())
				}
				f.end = time.Now()
				f.bound = f.end.Sub(f.start) + 3*time.Second
			}
			faults = append(faults, f)
			t.Logf("%6.1fs %s %s for %.1fs %s (after waiting %s)", f.start.Sub(epoch).Seconds(), f.kind, f.target, f.end.Sub(f.start).Seconds(), f.note, f.waitNote())
			sleep(between(6*time.Second, 12*time.Second)) // calm: the recovery, then steady state
		}
	}
done:
	sleep(time.Until(deadline))
	end := time.Now()
	// The finish moves each MP4 of the last runs to start at 0: where it
	// starts on the publishers' clock is read from its fragments first.
	var lastRuns []string
	for _, r := range recs {
		if r.ext == "mp4" {
			lastRuns = append(lastRuns, filepath.Join(r.dir, fmt.Sprintf("run%d", r.runs-1)))
		}
	}
	starts := waitMP4Starts(t, lastRuns...)
	for _, r := range recs {
		r.cmd.Process.Signal(os.Interrupt)
	}
	for _, r := range recs {
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("%s: exit %v at the end\n%s", r.name, err, r.log.String())
		}
		keepLog(t, r, r.runs-1)
	}

	// Every file decodes; the packet times of each track of each
	// broadcast, per recorder, over all its runs.
	type track struct{ pts []float64 }
	media := map[string]map[string]*track{}    // recorder -> "broadcast/codec"
	runEnds := map[string]map[string]float64{} // recorder/runN -> "broadcast/codec" -> last pts
	files := 0
	for _, r := range recs {
		media[r.name] = map[string]*track{}
		for run := range r.runs {
			paths, _ := filepath.Glob(filepath.Join(r.dir, fmt.Sprintf("run%d", run), "*."+r.ext))
			key := fmt.Sprintf("%s/run%d", r.name, run)
			runEnds[key] = map[string]float64{}
			for _, path := range paths {
				files++
				if run == r.runs-1 && !hasSuccessor(path) {
					cmdtest.DecodeAtFileTimes(t, path)
				} else {
					// Killed, or ended by a failed write (a full disk)
					// and recorded on in the next file.
					cmdtest.DecodeCutShort(t, path)
				}
				// NAME.ext, then NAME-1.ext, ... after a restart.
				b, _ := splitSuccessor(strings.TrimSuffix(filepath.Base(path), "."+r.ext))
				for codec, sp := range filePackets(t, path, starts) {
					id := b + "/" + codec
					if media[r.name][id] == nil {
						media[r.name][id] = &track{}
					}
					media[r.name][id].pts = append(media[r.name][id].pts, sp.Pts...)
					if len(sp.Pts) > 0 {
						// The newest over the run's files: a recording a
						// full disk ended goes on in NAME-1.ext.
						runEnds[key][id] = max(runEnds[key][id], slices.Max(sp.Pts))
					}
				}
			}
		}
		for id, tr := range media[r.name] {
			slices.Sort(tr.pts)
			tr.pts = slices.Compact(tr.pts)
			if len(tr.pts) == 0 {
				t.Errorf("%s %s: no packets", r.name, id)
			}
		}
		if len(media[r.name]) != 6 {
			t.Errorf("%s: tracks %v, want h264 and aac of legacy, loc and cmaf", r.name, mapsKeys(media[r.name]))
		}
	}
	at := func(ts time.Time) float64 { return ts.Sub(epoch).Seconds() }
	// largestGapIn returns the largest distance between neighbouring
	// packets of pts that begins in [from, to]: a hole that began before
	// the fault (a recorder restarted just before it, still joining) is
	// not the fault's.
	largestGapIn := func(pts []float64, from, to float64) float64 {
		gap := 0.0
		for i := 1; i < len(pts); i++ {
			if pts[i-1] >= from && pts[i-1] <= to {
				gap = max(gap, pts[i]-pts[i-1])
			}
		}
		return gap
	}
	for i, f := range faults {
		switch f.kind {
		case "blip", "publisher restart":
			for _, r := range recs {
				if r.pub.name != f.target {
					continue
				}
				for id, tr := range media[r.name] {
					codec := id[strings.Index(id, "/")+1:]
					gap := largestGapIn(tr.pts, at(f.start)-1, soakWindowEnd(faults, i, r, epoch))
					loss := time.Duration((gap - cmdtest.FrameDuration[codec]) * float64(time.Second))
					if f.kind == "blip" {
						// Nothing lost: neighbours at most 1.5 frames apart.
						loss = max(0, time.Duration((gap-1.5*cmdtest.FrameDuration[codec])*float64(time.Second)))
					}
					if loss >= f.loss {
						f.loss, f.own, f.worst = loss, loss, r.name+" "+id
					}
				}
			}
		case "recorder kill":
			losses := map[string]time.Duration{}
			for id, last := range runEnds[f.target+"/"+f.note] {
				losses[id] = time.Duration((at(f.start) - last) * float64(time.Second))
			}
			f.judge(losses)
		case "disk full":
			// What came from the kill that put the limit on to the
			// restarts once it was lifted: at most that plus 3 s.
			losses := map[string]time.Duration{}
			for _, r := range recs {
				if r.name != f.target {
					continue
				}
				for id, tr := range media[r.name] {
					codec := id[strings.Index(id, "/")+1:]
					gap := largestGapIn(tr.pts, at(f.start)-3, soakWindowEnd(faults, i, r, epoch))
					losses[id] = time.Duration((gap - cmdtest.FrameDuration[codec]) * float64(time.Second))
				}
			}
			f.judge(losses)
		}
	}

	var tb strings.Builder
	// Each failed decode (or a recording missing a track) is an error of
	// its own above; the table's first line must not say otherwise.
	decoded := "every file decoded with ffmpeg"
	if t.Failed() {
		decoded = "NOT every file decoded clean or held every track: see the errors in the log"
	}
	fmt.Fprintf(&tb, "chaos soak: %v, %d faults, %d files, %s\n\n", end.Sub(epoch).Round(time.Second), len(faults), files, decoded)
	// A kill's bound is about the kill's own part: its loss less how far
	// the recording trailed live at the kill (the live media held behind
	// a gap fill, the recovery's), which "behind at the kill" shows.
	fmt.Fprintf(&tb, "| at (s) | fault | target | waited (s) | lasted (s) | lost (s) | behind at the kill (s) | bound (s) | held | worst track / note |\n")
	fmt.Fprintf(&tb, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	breaches := 0
	for _, f := range faults {
		bound, held := "-", "yes"
		if f.bound >= 0 {
			bound = fmt.Sprintf("%.2f", f.bound.Seconds())
			if f.own > f.bound {
				held, breaches = "NO", breaches+1
			}
		}
		behind := "-"
		switch {
		case f.kind != "recorder kill" && f.kind != "disk full":
		case f.behind == nil:
			behind = "unknown"
		default:
			behind = fmt.Sprintf("%.2f", f.behindWorst.Seconds())
		}
		what := f.worst
		if f.note != "" {
			what = strings.TrimSpace(what + " " + f.note)
		}
		fmt.Fprintf(&tb, "| %.1f | %s | %s | %s | %.1f | %.2f | %s | %s | %s | %s |\n", at(f.start), f.kind, f.target, f.waitNote(),
			f.end.Sub(f.start).Seconds(), f.loss.Seconds(), behind, bound, held, what)
	}
	t.Log("\n" + tb.String())
	if p := os.Getenv("MOQ_SOAK_TABLE"); p != "" {
		if err := os.WriteFile(p, []byte(tb.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if breaches > 0 {
		t.Errorf("%d faults lost more than their bound", breaches)
	}
	if len(faults) < 2 {
		t.Errorf("only %d faults in %v", len(faults), duration)
	}
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// waitForBroadcasts waits (up to 30 s) until r's log, after its first
// from bytes, has a line starting with prefix for each of the soak's
// broadcasts; it reports whether it did.
func waitForBroadcasts(ctx context.Context, r *soakRecorder, from int, prefix string) bool {
	limit := time.Now().Add(30 * time.Second)
	for {
		seen := map[string]bool{}
		log := r.log.String()[from:]
		for _, line := range strings.Split(log, "\n") {
			if _, rest, ok := strings.Cut(line, prefix); ok {
				b, _, _ := strings.Cut(rest, " ")
				seen[strings.TrimSuffix(b, ")")] = true
			}
		}
		if len(seen) >= 3 {
			return true
		}
		if time.Now().After(limit) || ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hasSuccessor reports whether the recording of path went on in a next
// file of its run: NAME-1.ext after NAME.ext, NAME-3.ext after NAME-2.ext.
func hasSuccessor(path string) bool {
	ext := filepath.Ext(path)
	base, n := splitSuccessor(strings.TrimSuffix(path, ext))
	_, err := os.Stat(fmt.Sprintf("%s-%d%s", base, n+1, ext))
	return err == nil
}

// splitSuccessor splits NAME-N into NAME and N (NAME alone: 0).
func splitSuccessor(name string) (string, int) {
	if i := strings.LastIndex(name, "-"); i >= 0 {
		if v, err := strconv.Atoi(name[i+1:]); err == nil && v > 0 {
			return name[:i], v
		}
	}
	return name, 0
}

// keepLog writes r's log, that of its run number run, to MOQ_SOAK_LOGS,
// if set.
func keepLog(t *testing.T, r *soakRecorder, run int) {
	dir := os.Getenv("MOQ_SOAK_LOGS")
	if dir == "" || run < 0 {
		return
	}
	name := fmt.Sprintf("%s-run%d.log", strings.ReplaceAll(r.name, "/", "-"), run)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(r.log.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// waitNote says how long the soak waited before the fault for its
// recorders to catch up with live.
func (f *soakFault) waitNote() string {
	if f.waitTimedOut {
		return fmt.Sprintf("%.1f (still behind)", f.waited.Seconds())
	}
	return fmt.Sprintf("%.1f", f.waited.Seconds())
}

// judge takes the losses of the tracks a fault that killed a recorder
// touched (by "broadcast/codec"): the worst track is the one whose own
// part (its loss less how far its broadcast's recording trailed live at
// the kill) is the most, so that a recording far behind does not hide
// another's breach.
func (f *soakFault) judge(losses map[string]time.Duration) {
	first := true
	for id, loss := range losses {
		b, _, _ := strings.Cut(id, "/")
		behind := time.Duration(f.behind[b] * float64(time.Second))
		own := loss - behind
		if first || own > f.own || own == f.own && loss > f.loss {
			f.loss, f.own, f.behindWorst, f.worst, first = loss, own, behind, id, false
		}
	}
}

// soakAPI returns the base URL of r's control API (--http), read from the
// line its run logged, or "".
func soakAPI(r *soakRecorder) string {
	_, rest, ok := strings.Cut(r.log.String(), "status page on http://")
	if !ok {
		return ""
	}
	addr, _, _ := strings.Cut(rest, "\n")
	return "http://" + strings.TrimSpace(addr)
}

// soakBehind returns how far each recording r runs trails live (by
// broadcast, in seconds: the API's behind_seconds), or nil when its API
// does not answer within 2 s.
func soakBehind(r *soakRecorder) map[string]float64 {
	base := soakAPI(r)
	if base == "" {
		return nil
	}
	return readBehind(base)
}

// readBehind reads the recordings of the control API at base: each
// recording's behind_seconds by broadcast, or nil when it does not answer
// within 2 s.
func readBehind(base string) map[string]float64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/api/v1/recordings")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list struct {
		Recordings []struct {
			Broadcast string
			State     string
			Stats     struct {
				Behind float64 `json:"behind_seconds"`
			}
		}
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return nil
	}
	out := map[string]float64{}
	for _, rec := range list.Recordings {
		if rec.State == "recording" {
			out[rec.Broadcast] = max(out[rec.Broadcast], rec.Stats.Behind)
		}
	}
	return out
}

// soakCaughtUp reports whether behind (soakBehind's) has every soak
// broadcast recording and trailing live by less than a second (the
// recorder logs a recording caught up under that).
func soakCaughtUp(behind map[string]float64) bool {
	if len(behind) < len(strings.Split(cmdtest.SoakBroadcasts, ",")) {
		return false
	}
	for _, b := range behind {
		if b >= 1 {
			return false
		}
	}
	return true
}

// soakWaitCaughtUp waits, up to limit, until every recorder of recs
// records every broadcast within a second of live; it returns how long it
// waited and whether the limit ran out first.
func soakWaitCaughtUp(ctx context.Context, recs []*soakRecorder, limit time.Duration) (time.Duration, bool) {
	begin := time.Now()
	for {
		all := true
		for _, r := range recs {
			all = all && soakCaughtUp(soakBehind(r))
		}
		if all {
			return time.Since(begin), false
		}
		if time.Since(begin) >= limit || ctx.Err() != nil {
			return time.Since(begin), true
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
