package mkv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestKeepSizesUnknownRewritesOnlyTheHead: for an output that uploaded
// what it wrote, the finalization leaves the Clusters and the Segment of
// unknown size and changes nothing but the head (SeekHead, Info with the
// Duration); it appends the Cues. ffmpeg and mkvmerge read the result
// cleanly, with its duration.
func TestKeepSizesUnknownRewritesOnlyTheHead(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	ins := []input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)}
	var buf seekBuffer
	w := NewWriter(&buf, Options{KeepSizesUnknown: true})
	mediatest.Feed(t, w, ins...)
	before := bytes.Clone(buf.b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after := buf.b
	firstCluster := int(w.segData + w.clusterPos[0])
	if len(after) <= len(before) || !bytes.Equal(after[firstCluster:len(before)], before[firstCluster:]) {
		t.Fatalf("bytes past the head changed (%d before, %d after; first Cluster at %d)", len(before), len(after), firstCluster)
	}
	if n := bytes.Count(after, []byte{0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); n != len(w.clusterPos) {
		t.Errorf("%d of %d Clusters keep their unknown size", n, len(w.clusterPos))
	}
	path := filepath.Join(t.TempDir(), "x.mkv")
	if err := os.WriteFile(path, after, 0o644); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	mkvmergeClean(t, path)
	p := mediatest.Probe(t, path)
	if d, err := p.Format.Seconds(); err != nil || d < 1 {
		t.Errorf("duration %v, %v", d, err)
	}
	if !bytes.Contains(after[len(before):], []byte{0x1c, 0x53, 0xbb, 0x6b}) {
		t.Error("no Cues appended")
	}
}
