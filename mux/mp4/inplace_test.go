package mp4_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// fragmentData returns, per moof+mdat pair of a fragmented file, the offset
// of its mdat payload and the payload.
func fragmentData(t *testing.T, b []byte) (offsets []int, payloads [][]byte) {
	t.Helper()
	for off := 0; off+8 <= len(b); {
		size := int(binary.BigEndian.Uint32(b[off:]))
		if size < 8 || off+size > len(b) {
			t.Fatalf("box at %d of size %d in a file of %d bytes", off, size, len(b))
		}
		if string(b[off+4:off+8]) == "mdat" {
			offsets = append(offsets, off+8)
			payloads = append(payloads, b[off+8:off+size])
		}
		off += size
	}
	return offsets, payloads
}

// TestFinishInPlaceMovesOnlyWhatTheHeaderCovers: the finish changes the
// recording in the same file: the finished header (ftyp, moov, the mdat
// header) takes the file's first bytes, the samples of the fragments that
// lay there move to the end, and every other byte of the fragments stays
// where the recording wrote it. So the finish costs the moov, not the
// media, on every file system. The same media recorded as a stream (no
// Options.Path) gives the fragmented bytes to compare with.
func TestFinishInPlaceMovesOnlyWhatTheHeaderCovers(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		name string
		ins  []mediatest.Input
	}{
		{"h264+aac", []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 3), loop(mediatest.SampleInput("aac", 2), 3)}},
		{"aac", []mediatest.Input{loop(mediatest.SampleInput("aac", 1), 3)}},
		// One frame: the finished header is longer than the whole
		// fragmented file.
		{"one opus frame", []mediatest.Input{firstFrames(mediatest.SampleInput("opus", 1), 1)}},
		{"two h264 frames", []mediatest.Input{firstFrames(mediatest.SampleInput("h264", 1), 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fragmented, err := os.ReadFile(muxFile(t, "stream.mp4", false, mp4.Options{}, tc.ins...))
			if err != nil {
				t.Fatal(err)
			}
			f, path := mediatest.CreateFile(t, "inplace.mp4")
			w := mp4.NewWriter(f, mp4.Options{Path: path})
			mediatest.Feed(t, w, tc.ins...)
			st0, _ := os.Stat(path)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if c := w.Counters(); !c.Finished || !c.FinishedInPlace {
				t.Fatalf("counters %+v, want finished in place", c)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if st1, _ := os.Stat(path); !os.SameFile(st0, st1) {
				t.Error("the finish replaced the file instead of changing it in place")
			}
			if boxes := compactBoxes(topBoxes(t, path)); boxes != "ftyp,moov,mdat" {
				t.Fatalf("finished boxes %s, want ftyp,moov,mdat", boxes)
			}
			ftypSize := int(binary.BigEndian.Uint32(after))
			end := ftypSize + int(binary.BigEndian.Uint32(after[ftypSize:])) + 8 // the mdat payload
			if mdat := int(binary.BigEndian.Uint32(after[end-8:])); end-8+mdat != len(after) {
				t.Errorf("mdat of %d bytes at %d does not end with the file (%d bytes)", mdat, end-8, len(after))
			}
			offsets, payloads := fragmentData(t, fragmented)
			var moved []byte
			for i, off := range offsets {
				if off < end {
					moved = append(moved, payloads[i]...)
				}
			}
			wantLen := len(fragmented)
			if len(moved) > 0 {
				wantLen = max(len(fragmented)+8, end) + len(moved)
			}
			if len(after) != wantLen {
				t.Fatalf("finished file of %d bytes, want %d: the %d-byte fragmented file, and %d bytes of samples moved from under the %d-byte header", len(after), wantLen, len(fragmented), len(moved), end)
			}
			if end < len(fragmented) && !bytes.Equal(after[end:len(fragmented)], fragmented[end:]) {
				t.Error("bytes of the fragments past the finished header changed")
			}
			if !bytes.HasSuffix(after, moved) {
				t.Error("the moved samples are not at the end of the file")
			}
			t.Logf("%d-byte header over a %d-byte fragmented file: %d bytes of samples of %d of %d fragments moved", end, len(fragmented), len(moved), countBelow(offsets, end), len(offsets))
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			o := origin(tc.ins...)
			for i, in := range tc.ins {
				checkPackets(t, path, p, i, in, o, 1000)
			}
		})
	}
}

func countBelow(offsets []int, end int) int {
	n := 0
	for _, o := range offsets {
		if o < end {
			n++
		}
	}
	return n
}

// firstFrames returns in with its first n frames.
func firstFrames(in mediatest.Input, n int) mediatest.Input {
	in.Frames = in.Frames[:n]
	in.Track.Name = fmt.Sprintf("%s[:%d]", in.Track.Name, n)
	return in
}
