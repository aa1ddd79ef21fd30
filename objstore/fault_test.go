package objstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
)

// childEnv makes the test binary a recorder process (recorderChild):
// what a test kills with SIGKILL, or runs with an environment of its own.
const childEnv = "OBJSTORE_TEST_CHILD"

// childCommand runs the test binary as a child doing what (open, record)
// with url and spool.
func childCommand(t *testing.T, what, url, spool string, args ...string) *exec.Cmd {
	cmd := proctest.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(append([]string{what, url, spool}, args...), "\n"))
	return cmd
}

// killAfterAPart starts cmd, a recording child, reads its progress and
// SIGKILLs it once a part went up while recording and 2 s more of media
// were recorded. It returns the media recorded and the media time at
// which the first part had gone up.
func killAfterAPart(t *testing.T, cmd *exec.Cmd) (media, partsAt float64) {
	t.Helper()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	partsAt = -1
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var m float64
		var parts int
		if _, err := fmt.Sscanf(sc.Text(), "media %f parts %d", &m, &parts); err != nil {
			t.Fatalf("child: %s", sc.Text())
		}
		media = m
		if parts >= 1 && partsAt < 0 {
			partsAt = m
		}
		if partsAt >= 0 && m >= partsAt+2 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if partsAt < 0 {
		t.Fatal("the child ended before a part went up")
	}
	return media, partsAt
}

// recorderChild is the child's main: "open URL SPOOL" opens the Output
// and says how that went; "record URL SPOOL FORMAT" records the realtime
// demo at 16 Mb/s into it until killed, printing the media time recorded
// and the parts uploaded every 100 ms.
func recorderChild() int {
	args := strings.Split(os.Getenv(childEnv), "\n")
	ctx := context.Background()
	opts := objstore.Options{SpoolDir: args[2], Logger: quiet}
	if len(args) > 4 {
		opts.EarlyHeadAfter, _ = strconv.ParseInt(args[4], 10, 64)
	}
	var local string // also record into this local file, to compare
	if len(args) > 5 {
		local = args[5]
	}
	out, err := objstore.Open(ctx, args[1], opts)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if args[0] == "open" {
		fmt.Println("opened")
		return 0
	}
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	// SIGTERM ends the broadcast: the recordings then finish.
	pctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	go demo.Publish(pctx, bc, demo.Options{Realtime: true, VideoBitrate: 16_000_000, KeepGroups: 1 << 20, Hold: hold})
	rec, err := record.New(record.Options{Output: out, Format: record.Format(args[3]), Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	go func() {
		for rec.Stats().Tracks < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		close(hold)
		for {
			st := rec.Stats()
			fmt.Printf("media %.3f parts %d\n", st.Media.Seconds(), st.Upload.Parts)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if local != "" {
		files, err := record.Files(local, record.FileOptions{})
		if err == nil {
			var lrec *record.Recorder
			if lrec, err = record.New(record.Options{Output: files, Format: record.Format(args[3]), Logger: quiet}); err == nil {
				go func() {
					if err := lrec.Record(ctx, record.Local(bc), "demo"); err == nil {
						fmt.Println("local finished")
					}
				}()
			}
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
	}
	if err := rec.Record(ctx, record.Local(bc), "demo"); err != nil {
		fmt.Println(err)
		return 1
	}
	return 0
}

// TestARecorderKilledAndStartedAgainCompletesItsObject: a recorder killed
// with SIGKILL while its parts go up leaves the spool; a recorder started
// again with that spool (Recover) completes the object, which plays and
// holds everything up to ~1 s before the kill.
func TestARecorderKilledAndStartedAgainCompletesItsObject(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	for _, f := range []record.Format{record.MP4, record.MKV, record.FLV} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			spool := t.TempDir()
			url := "s3://rec/killed/{broadcast}" + f.Ext() + "?endpoint=" + s.Endpoint
			media, partsAt := killAfterAPart(t, childCommand(t, "record", url, spool, string(f)))

			out := open(t, s, "s3://rec/killed/{broadcast}"+f.Ext(), objstore.Options{SpoolDir: spool})
			got, err := out.Recover(context.Background())
			if err != nil || len(got) != 1 || got[0].URL != "s3://rec/killed/demo"+f.Ext() || got[0].Finished {
				t.Fatalf("Recover: %+v, %v", got, err)
			}
			p := objectFile(t, s, "rec", "killed/demo"+f.Ext())
			mediatest.DecodeClean(t, p)
			pr := mediatest.Probe(t, p)
			last := 0.0
			for _, pk := range pr.Packets {
				if v, err := strconv.ParseFloat(pk.PTSTime, 64); err == nil && v > last {
					last = v
				}
			}
			t.Logf("%s: killed at %.2f s of media (a part had gone up at %.2f s); the recovered object reaches %.2f s", f, media, partsAt, last)
			if f == record.FLV {
				// Its finished form: onMetaData has the duration and size.
				data, _ := os.ReadFile(p)
				dur, size := amfNumber(data, "duration"), amfNumber(data, "filesize")
				if math.Abs(dur-last) > 0.1 || size != float64(len(data)) {
					t.Errorf("onMetaData: duration %.3f s, filesize %.0f; the last packet is at %.3f s, the object %d bytes", dur, size, last, len(data))
				}
			}
			if last < media-1 {
				t.Errorf("the recovered object ends at %.2f s, the recorder had written %.2f s", last, media)
			}
			if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
				t.Errorf("spool keeps %v", left)
			}
		})
	}
}

// TestAStoreOutageLosesNothing: the store goes away while a recording
// uploads (refused connections) and comes back; the parts wait in the
// spool and go up in order, and the finished object equals a local
// recording of the same broadcast frame for frame. The outage lasts 5 s;
// MOQ_S3_LONG=1 makes it 60 s.
func TestAStoreOutageLosesNothing(t *testing.T) {
	t.Parallel()
	outage, loops := 5*time.Second, 5
	if os.Getenv("MOQ_S3_LONG") == "1" {
		outage, loops = 60*time.Second, 22
	}
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	// The head part goes up early too (as past 256 MiB): the finish
	// replaces it.
	out := open(t, s, "s3://rec/outage/{broadcast}.mp4", objstore.Options{EarlyHeadAfter: 2 * objstore.DefaultPartSize})
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	var published atomic.Int64
	pubDone := make(chan error, 1)
	go func() {
		pubDone <- demo.Publish(context.Background(), bc, demo.Options{Realtime: true, Loops: loops, VideoBitrate: 16_000_000, KeepGroups: 1 << 20, Hold: hold, Published: &published})
	}()
	rec, err := record.New(record.Options{Output: out, Format: record.MP4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var stoppedAt, backAt time.Time
	var spoolPeak int64
	go func() {
		for rec.Stats().Tracks < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		close(hold)
		// Away once the head part is written, back after the outage and
		// once a whole part waits in the spool behind it (parts are cut
		// before a keyframe, at the latest 2 parts past the last cut).
		for rec.Stats().Upload.BytesWritten < objstore.DefaultPartSize+1<<20 {
			time.Sleep(20 * time.Millisecond)
		}
		s.Stop()
		stoppedAt = time.Now()
		for {
			u := rec.Stats().Upload
			spoolPeak = max(spoolPeak, u.SpoolBytes)
			if time.Since(stoppedAt) >= outage && u.SpoolBytes >= 3*objstore.DefaultPartSize {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		s.Restart(t)
		backAt = time.Now()
	}()
	if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
		t.Fatal(err)
	}
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}
	if backAt.IsZero() {
		t.Fatal("the recording ended before the outage was over")
	}
	u := rec.Stats().Upload
	t.Logf("store away %.1f s; spool peaked at %d bytes; %d requests retried; %d bytes recorded, %d uploaded (ratio %.4f)",
		backAt.Sub(stoppedAt).Seconds(), spoolPeak, u.Retries, u.BytesWritten, u.BytesUploaded, float64(u.BytesUploaded)/float64(u.BytesWritten))
	if u.Retries == 0 || u.Objects != 1 || u.SpoolBytes != 0 || u.Failures != 0 {
		t.Errorf("upload stats %+v: want retries, one object, an empty spool", u)
	}
	local, _ := record.Files(filepath.Join(t.TempDir(), "local.mp4"), record.FileOptions{})
	_, lfiles := recordInto(t, context.Background(), local, record.MP4, record.Local(bc))
	p := objectFile(t, s, "rec", "outage/demo.mp4")
	mediatest.DecodeClean(t, p)
	if n := sameFrames(t, p, lfiles[0].Path); int64(n) != published.Load() {
		t.Errorf("%d frames in the object, %d published", n, published.Load())
	}
}

// TestAFullSpoolCutsTheRecordingCleanly: while the store is away, parts
// wait in the spool up to SpoolMax; past it the recording is cut (the
// reason logged), and what was recorded before becomes a playable object
// once the store is back.
func TestAFullSpoolCutsTheRecordingCleanly(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	var logs syncBuffer
	out, err := objstore.Open(context.Background(), "s3://rec/full/{broadcast}.mkv?endpoint="+s.Endpoint,
		objstore.Options{SpoolDir: t.TempDir(), SpoolMax: objstore.DefaultPartSize})
	if err != nil {
		t.Fatal(err)
	}
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	var published atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go demo.Publish(ctx, bc, demo.Options{Realtime: true, VideoBitrate: 16_000_000, KeepGroups: 1 << 20, Hold: hold, Published: &published})
	rec, err := record.New(record.Options{Output: out, Format: record.MKV, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for rec.Stats().Tracks < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		close(hold)
		for rec.Stats().Upload.BytesWritten < objstore.DefaultPartSize+1<<20 {
			time.Sleep(20 * time.Millisecond)
		}
		s.Stop()
		for rec.Stats().Upload.Cuts == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second) // the cut recording waits for the store to finish
		s.Restart(t)
	}()
	if err := rec.Record(ctx, record.Local(bc), "demo"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "recording cut") || !strings.Contains(logs.String(), "spool full") {
		t.Errorf("the cut does not say why:\n%s", logs.String())
	}
	files := rec.Files()
	u := rec.Stats().Upload
	if len(files) != 1 || files[0].Frames == 0 || files[0].Frames >= published.Load() || u.Objects != 1 || u.SpoolBytes != 0 {
		t.Fatalf("files %+v (published %d so far), upload %+v", files, published.Load(), u)
	}
	p := objectFile(t, s, "rec", "full/demo.mkv")
	mediatest.DecodeClean(t, p)
	if n := len(mediatest.Probe(t, p).Packets); int64(n) != files[0].Frames {
		t.Errorf("ffprobe reads %d frames, the recording wrote %d", n, files[0].Frames)
	}
	t.Logf("cut after %d frames (%.1f s), %d bytes recorded; %d retries", files[0].Frames, files[0].Media, u.BytesWritten, u.Retries)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestARecordingWhoseSpoolIsLostIsCompletedFromTheStore: a recorder
// killed together with its spool (another machine takes over) leaves an
// unfinished upload; once its head part went up (EarlyHeadAfter, here 2
// parts instead of 256 MiB), RecoverStore completes it from the store
// alone into a playable object holding every part that reached it.
func TestARecordingWhoseSpoolIsLostIsCompletedFromTheStore(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	spool := t.TempDir()
	url := "s3://rec/lost/{broadcast}.mp4?endpoint=" + s.Endpoint
	cmd := childCommand(t, "record", url, spool, "mp4", strconv.Itoa(2*objstore.DefaultPartSize))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var media, partsAt float64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var parts int
		if _, err := fmt.Sscanf(sc.Text(), "media %f parts %d", &media, &parts); err != nil {
			t.Fatalf("child: %s", sc.Text())
		}
		if parts >= 3 { // parts 2 and 3, and the head part
			partsAt = media
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if partsAt == 0 {
		t.Fatal("the child ended before its parts went up")
	}
	os.RemoveAll(spool) // the machine is gone

	out := open(t, s, "s3://rec/lost/{broadcast}.mp4", objstore.Options{})
	got, err := out.RecoverStore(context.Background(), 0)
	if err != nil || len(got) != 1 || got[0].URL != "s3://rec/lost/demo.mp4" {
		t.Fatalf("RecoverStore: %+v, %v", got, err)
	}
	p := objectFile(t, s, "rec", "lost/demo.mp4")
	if st, _ := os.Stat(p); st.Size() != got[0].Size || st.Size() < 3*objstore.DefaultPartSize {
		t.Errorf("object of %d bytes, RecoverStore says %d; 3 parts of %d went up", st.Size(), got[0].Size, objstore.DefaultPartSize)
	}
	mediatest.DecodeClean(t, p)
	last := 0.0
	for _, pk := range mediatest.Probe(t, p).Packets {
		if v, err := strconv.ParseFloat(pk.PTSTime, 64); err == nil && v > last {
			last = v
		}
	}
	t.Logf("killed at %.2f s of media with 3 parts in the store; the object from the store alone reaches %.2f s", media, last)
	// 3 parts of 8 MiB at 16 Mb/s hold about 12 s.
	if last < 10 {
		t.Errorf("the object ends at %.2f s", last)
	}
	// Nothing is left to complete.
	if again, err := out.RecoverStore(context.Background(), 0); err != nil || len(again) != 0 {
		t.Errorf("second RecoverStore: %+v, %v", again, err)
	}
}

// TestARecordingUnder256MiBWhoseSpoolIsLostIsCompletedFromItsParts: a
// recorder killed together with its spool before its head part went up
// (recordings under EarlyHeadAfter keep it in the spool for the finish)
// leaves an unfinished upload with the file's header beside it;
// RecoverStore completes it from the store alone into a playable object:
// the header followed by the parts from the second on. The object holds,
// frame for frame, what a local recording of the same run holds from the
// second part's first keyframe to the end of the last part, and nothing
// of the upload is left in the store.
func TestARecordingUnder256MiBWhoseSpoolIsLostIsCompletedFromItsParts(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	for _, format := range []string{"mp4", "mkv", "flv"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			url := "s3://rec/" + format + "/{broadcast}." + format
			object := recoverLostSpool(t, format, url+"?endpoint="+s.Endpoint, false,
				func() *objstore.Output { return open(t, s, url, objstore.Options{}) },
				func() string { return objectFile(t, s, "rec", format+"/demo."+format) })
			if object != "s3://rec/"+format+"/demo."+format {
				t.Errorf("recovered %s", object)
			}
			if left, _ := filepath.Glob(filepath.Join(s.Dir, "rec", ".moq-export-parts", format, "*", "*", "*")); len(left) != 0 {
				t.Errorf("left in the store: %v", left)
			}
		})
	}
}

// recoverLostSpool records format into url in a child process, kills it
// with SIGKILL once parts 2 and 3 went up and removes its spool, then
// completes the upload with RecoverStore on the Output reopen returns,
// checks the object (fetch writes it to a file) against a local
// recording of the same run, and returns its URL.
//
// fromStart says the head part went up as part 1 (GCS, Azure): the object
// then holds the recording from its start; else (S3) from the second
// part's first keyframe.
func recoverLostSpool(t *testing.T, format, url string, fromStart bool, reopen func() *objstore.Output, fetch func() string) string {
	t.Helper()
	spool := t.TempDir()
	local := filepath.Join(t.TempDir(), "local."+format)
	cmd := childCommand(t, "record", url, spool, format, "0", local)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var media, killAt float64
	parts := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "media %f parts %d", &media, &parts); err != nil {
			t.Fatalf("child: %s", sc.Text())
		}
		if parts >= 2 && killAt == 0 { // parts 2 and 3 (the header went up before them)
			// A second more, so that the local recording (flushed every
			// 500 ms) holds what the parts hold.
			killAt = media + 1
		}
		if killAt > 0 && media >= killAt {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if parts < 2 {
		t.Fatal("the child ended before its parts went up")
	}
	os.RemoveAll(spool) // the machine is gone

	out := reopen()
	got, err := out.RecoverStore(context.Background(), 0)
	if err != nil || len(got) != 1 || got[0].WithoutHead == fromStart {
		t.Fatalf("RecoverStore: %+v, %v", got, err)
	}
	p := fetch()
	if st, _ := os.Stat(p); st.Size() != got[0].Size || st.Size() < 2*objstore.DefaultPartSize {
		t.Errorf("object of %d bytes, RecoverStore says %d; 2 parts of %d went up", st.Size(), got[0].Size, objstore.DefaultPartSize)
	}
	mediatest.DecodeClean(t, p)
	first, last, n := sameRun(t, p, local)
	t.Logf("killed at %.2f s of media with 2 parts in the store; the object from the store alone holds %d packets from %.2f s to %.2f s", media, n, first, last)
	// 2 parts of 8 MiB at 16 Mb/s hold about 8.4 s: from the start, or
	// after the head part (about 4.2 s) when it never left the spool.
	if fromStart && first > 0.1 || !fromStart && first < 3 || last-first < 7 {
		t.Errorf("the object holds %.2f s to %.2f s", first, last)
	}
	if again, err := out.RecoverStore(context.Background(), 0); err != nil || len(again) != 0 {
		t.Errorf("second RecoverStore: %+v, %v", again, err)
	}
	return got[0].URL
}

// sameRun checks that every stream of got is a run of the packets of the
// same stream of want (count, presentation times within 1 ms, key
// flags), its video beginning at a keyframe, and returns where got's
// first video packet and its last packet are, and its packet count. want
// is a local recording killed with got's recorder: got may go on past
// its last flush (a part uploaded in want's last half second), and what
// goes past is not compared.
func sameRun(t *testing.T, got, want string) (first, last float64, n int) {
	t.Helper()
	g, w := mediatest.Probe(t, got), probeCut(t, want)
	if len(g.Streams) != len(w.Streams) {
		t.Fatalf("%d streams, the local recording %d", len(g.Streams), len(w.Streams))
	}
	pts := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for i := range g.Streams {
		gp, wp := g.PacketsOf(i), w.PacketsOf(i)
		if len(gp) == 0 {
			t.Fatalf("stream %d: no packets", i)
		}
		j := 0
		for j < len(wp) && pts(wp[j].PTSTime) < pts(gp[0].PTSTime)-0.0005 {
			j++
		}
		if j == len(wp) {
			t.Fatalf("stream %d: the local recording ends before %s s", i, gp[0].PTSTime)
		}
		if len(wp)-j < len(gp) {
			t.Logf("stream %d: %d packets from %s s, the local recording %d from there: the last %d are not compared", i, len(gp), gp[0].PTSTime, len(wp)-j, len(gp)-(len(wp)-j))
		}
		for k := range min(len(gp), len(wp)-j) {
			a, b := pts(gp[k].PTSTime), pts(wp[j+k].PTSTime)
			if math.Abs(a-b) > 0.001 || (gp[k].Flags[0] == 'K') != (wp[j+k].Flags[0] == 'K') {
				t.Fatalf("stream %d packet %d: pts %s flags %s, the local recording %s %s", i, k, gp[k].PTSTime, gp[k].Flags, wp[j+k].PTSTime, wp[j+k].Flags)
			}
		}
		if g.Streams[i].CodecType == "video" {
			if gp[0].Flags[0] != 'K' {
				t.Errorf("stream %d begins with a packet that is not a keyframe", i)
			}
			first = pts(gp[0].PTSTime)
		}
		last = max(last, pts(gp[len(gp)-1].PTSTime))
		n += len(gp)
	}
	return first, last, n
}

// cutShort are what ffprobe says of a file its writer was killed writing:
// the buffered file output flushes whole buffers, not whole blocks or
// fragments, so its last block (MKV) or fragment (MP4) may be cut, and
// the cut packet may not parse.
var cutShort = []string{"File ended prematurely", "partial file", "Invalid NAL unit size", "missing picture in access unit", "Last message repeated"}

// probeCut is mediatest.Probe for want, a local recording killed with its
// recorder: an end cut short is what such a file is, any other message
// fails t.
func probeCut(t *testing.T, path string) mediatest.ProbeResult {
	t.Helper()
	mediatest.RequireTools(t, "ffprobe")
	stdout, stderr := mediatest.Run(t, "ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_format", "-show_packets", path)
	for line := range strings.Lines(stderr) {
		if !slices.ContainsFunc(cutShort, func(s string) bool { return strings.Contains(line, s) }) {
			t.Fatalf("ffprobe on %s reported errors:\n%s", filepath.Base(path), stderr)
		}
	}
	var r mediatest.ProbeResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("ffprobe json: %v\n%s", err, stdout)
	}
	return r
}

// TestARecorderKilledDuringTheFinishCompletesItOnRestart: the recording
// ends, and the recorder is killed (SIGKILL) while the store holds its
// CompleteMultipartUpload: before the store completed the object, or
// after it did but before the recorder heard back. A recorder started
// again with the same spool (Recover) makes the finished object (an MP4
// with its moov in front, an MKV with Cues), equal frame for frame to a
// local recording of the same run (nothing lost, nothing twice), and
// leaves no unfinished upload, no header object and an empty spool.
func TestARecorderKilledDuringTheFinishCompletesItOnRestart(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	for _, tc := range []struct {
		name, format string
		forward      bool // the store completes the object before the kill
	}{
		{"mp4 before the store completed", "mp4", false},
		{"mp4 after the store completed", "mp4", true},
		{"mkv after the store completed", "mkv", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arrived, killed := make(chan struct{}, 1), make(chan struct{})
			target, _ := neturl.Parse(s.Endpoint)
			rp := httputil.NewSingleHostReverseProxy(target)
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || !r.URL.Query().Has("uploadId") {
					rp.ServeHTTP(w, r)
					return
				}
				// CompleteMultipartUpload: held until the recorder dies.
				if tc.forward {
					rp.ServeHTTP(httptest.NewRecorder(), r)
				}
				select {
				case arrived <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-killed:
				}
			}))
			defer proxy.Close()
			var once sync.Once
			kill := func() { once.Do(func() { close(killed) }) }
			defer kill()
			dir := strings.ReplaceAll(tc.name, " ", "-")
			spool := t.TempDir()
			local := filepath.Join(t.TempDir(), "local."+tc.format)
			cmd := childCommand(t, "record", "s3://rec/"+dir+"/{broadcast}."+tc.format+"?endpoint="+proxy.URL, spool, tc.format, "0", local)
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var media float64
			for line := range lines {
				parts := 0
				if _, err := fmt.Sscanf(line, "media %f parts %d", &media, &parts); err != nil {
					t.Fatalf("child: %s", line)
				}
				if parts >= 2 { // the finish then puts the object together from parts
					break
				}
			}
			cmd.Process.Signal(syscall.SIGTERM)
			localDone, held := false, false
			for !localDone || !held {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatal("the child ended before its finish")
					}
					localDone = localDone || line == "local finished"
				case <-arrived:
					held = true
				case <-time.After(2 * time.Minute):
					t.Fatalf("no finish: local %v, complete %v", localDone, held)
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			kill()

			out := open(t, s, "s3://rec/"+dir+"/{broadcast}."+tc.format, objstore.Options{SpoolDir: spool})
			got, err := out.Recover(context.Background())
			if err != nil || len(got) != 1 || !got[0].Finished {
				t.Fatalf("Recover: %+v, %v", got, err)
			}
			p := objectFile(t, s, "rec", dir+"/demo."+tc.format)
			if tc.format == "mp4" {
				data, _ := os.ReadFile(p)
				if boxes := strings.Join(topBoxes(data), " "); !strings.HasPrefix(boxes, "ftyp moov") {
					t.Errorf("top-level boxes %s, want the moov in front", boxes)
				}
			}
			mediatest.DecodeClean(t, p)
			n := sameFrames(t, p, local)
			t.Logf("killed with the finish held at %.2f s of media; the object holds the %d packets of the local recording", media, n)
			if left, _ := filepath.Glob(filepath.Join(s.Dir, "rec", ".moq-export-parts", dir, "*", "*", "*")); len(left) != 0 {
				t.Errorf("left in the store: %v", left)
			}
			if again, err := out.RecoverStore(context.Background(), 0); err != nil || len(again) != 0 {
				t.Errorf("unfinished uploads left: %+v, %v", again, err)
			}
			if left, _ := os.ReadDir(spool); len(left) != 0 {
				t.Errorf("left in the spool: %v", left)
			}
		})
	}
}

// amfNumber reads the AMF0 number named name in an FLV's onMetaData (-1
// when there is none).
func amfNumber(flv []byte, name string) float64 {
	key := append(append([]byte{0, byte(len(name))}, name...), 0)
	i := bytes.Index(flv, key)
	if i < 0 || i+len(key)+8 > len(flv) {
		return -1
	}
	return math.Float64frombits(binary.BigEndian.Uint64(flv[i+len(key):]))
}
