package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// TestReferenceCMAFPublisherRecordsEveryFrame: the reference publisher
// packages the h264 and aac samples with @moq/hang's own CMAF encoder
// (Container.Cmaf: createVideoInitSegment and createAudioInitSegment into
// the catalog's init, one encodeDataSegment moof+mdat per frame) and
// publishes them through @moq/net. Our session demuxes every frame back to
// its codec bytes and timestamp (compared frame by frame with the
// manifest), and an export records the broadcast into a Matroska file that
// ffmpeg decodes without a message, with every frame.
func TestReferenceCMAFPublisherRecordsEveryFrame(t *testing.T) {
	ref := needReference(t)
	recordReferenceIn(t, ref, catalog.ContainerCMAF, "", nil)
}

// TestReferenceCMAFAndLOCPublishersOverIETFDraftsRecordEveryFrame is the
// same over moq-transport drafts 14, 18 and 20, for the reference's CMAF
// and its LOC (Container.Loc, @moq/loc: a property block with the
// timestamp before each codec payload): the broadcasts an IETF relay
// carries (the garbage files: the IETF read path never unpacked
// CMAF) decode clean, frame for frame.
func TestReferenceCMAFAndLOCPublishersOverIETFDraftsRecordEveryFrame(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	for _, container := range []catalog.ContainerKind{catalog.ContainerCMAF, catalog.ContainerLOC} {
		for _, d := range ietfDraftsNamed("Draft14", "Draft18", "Draft20") {
			t.Run(string(container)+"/"+d.name, func(t *testing.T) {
				t.Parallel()
				recordReferenceIn(t, ref, container, d.version, []string{d.version}, "--alpn", d.alpn)
			})
		}
	}
}

// TestReferenceLOCPublisherRecordsEveryFrame: the reference's LOC over
// moq-lite, as its CMAF above.
func TestReferenceLOCPublisherRecordsEveryFrame(t *testing.T) {
	ref := needReference(t)
	recordReferenceIn(t, ref, catalog.ContainerLOC, "", nil)
}

// recordReferenceIn has the reference publish the samples in container
// (cmaf or loc; with flags added to its own), records them over our
// session pinned to versions (nil: any; want: the version it must run,
// "": any) and checks the frames and the Matroska file.
func recordReferenceIn(t *testing.T, ref *reference, container catalog.ContainerKind, want string, versions []string, flags ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// One audio frame per group: CMAF marks every audio sample a
	// keyframe, which the manifest's expectation says of group starts only.
	m := sampleBroadcast("interop/cmaf.hang", 1)
	_, cert := ourCert(t)
	pub := ref.start(ctx, t, "publish", append([]string{"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--speed", "2", "--container", string(container)}, flags...)...)
	port := pub.expect(ctx, "listening", nil).Port
	sess, err := subscribe.Dial(ctx, fmt.Sprintf("moql://127.0.0.1:%d/", port), subscribe.Options{
		TLSFingerprint: cert.fingerprint,
		Reconnect:      subscribe.Backoff{Disabled: true},
		Versions:       versions,
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if got := sess.Version(); want != "" && got != want {
		t.Fatalf("negotiated %q, want %s", got, want)
	}
	waitAnnounced(ctx, t, sess, m.Broadcast)
	bc := sess.Broadcast(m.Broadcast)

	path := filepath.Join(t.TempDir(), string(container)+".mkv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := mkv.NewWriter(f, mkv.Options{})
	// As a recording into a file: the delay may grow for a track that
	// lags (record.DefaultMaxDelay) and counts media time only. With the
	// live defaults (a fixed 500 ms), a machine that stalls and then
	// takes a second of video from its one stream before the same second
	// of audio from its many (a group per frame) drops that audio as late.
	e := export.New(bc, w, export.Options{Latency: time.Minute, MaxDelay: record.DefaultMaxDelay, MediaTimeOnly: true})
	ectx, stopExport := context.WithCancel(ctx)
	defer stopExport()
	exported := make(chan error, 1)

	pubDone := collectPublished(ctx, pub)
	// The export subscribes beside the session's own reader, before
	// either reads a frame: neither joins after the other read groups.
	cat, got := recordBroadcastBeside(ctx, t, bc, func(cat *catalog.Catalog) {
		go func() { exported <- e.Run(ectx) }()
		for e.Stats().Tracks < len(cat.Renditions()) {
			select {
			case <-ctx.Done():
				t.Fatalf("the export subscribed %d of %d tracks", e.Stats().Tracks, len(cat.Renditions()))
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	for _, r := range cat.Renditions() {
		if r.Common().ContainerKind() != container || r.Common().InitErr() != nil {
			t.Errorf("rendition %s: container %q, init error %v", r.Name, r.Common().ContainerKind(), r.Common().InitErr())
		}
	}
	p := awaitPublished(ctx, t, pubDone)
	checkCatalog(t, cat, p.catalog)
	compareRecording(t, m, p, got)
	// The reference keeps its catalog track open: once the export has
	// seen both media tracks end, stop it (Run finalizes the file).
	for e.Stats().Tracks > 0 || e.Stats().Frames == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("export still has %d tracks", e.Stats().Tracks)
		case <-time.After(10 * time.Millisecond):
		}
	}
	stopExport()
	if err := <-exported; err != nil && ectx.Err() == nil {
		t.Fatalf("export: %v", err)
	}
	f.Close()
	_ = sess.Close()
	pub.wait(ctx)

	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Skip("ffprobe not installed: the recording is not checked")
	}
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-").CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("ffmpeg decoding the recording: %v\n%s", err, out)
	}
	counts, err := exec.Command("ffprobe", "-v", "error", "-count_packets", "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(counts)) {
		codec, n, _ := strings.Cut(line, ",")
		track := map[string]string{"h264": "video", "aac": "audio"}[codec]
		if c, _ := strconv.Atoi(n); track == "" || c != len(m.track(track).Frames) {
			t.Errorf("recording has %s packets of %s, the publisher sent %d", n, codec, len(m.track(track).Frames))
		}
	}
}
