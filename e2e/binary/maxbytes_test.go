package binary

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// TestMaxBytesSplitsBySizeAndNeverPassesIt: with {n} in the template,
// --max-bytes starts the next file at a keyframe (OBS's "split by size")
// and no file passes the limit, in every format; every frame of the
// recording is in one of the files, each of which starts with a keyframe
// and decodes. Without {n} the recording ends under the limit.
func TestMaxBytesSplitsBySizeAndNeverPassesIt(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	const limit = 150 * 1024 // 150k: about three of the demo's 1 s groups
	for _, ext := range []string{"mkv", "mp4", "ts", "flv"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := cmdtest.Run(t, dir, "--demo-fast", "--duration", "10s", "--max-bytes", "150k", "-o", "rec/{n}."+ext, "--summary", "sum.json")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			var sum struct {
				Files   []struct{ Path string } `json:"files"`
				Frames  int64                   `json:"frames"`
				Dropped int64                   `json:"dropped"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, "sum.json"))
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
			sort.Strings(files)
			if len(files) < 3 || len(files) != len(sum.Files) || sum.Dropped != 0 {
				t.Fatalf("%d files (summary %d), %d frames dropped; want 3 or more, none dropped", len(files), len(sum.Files), sum.Dropped)
			}
			video, all := 0, 0
			for _, f := range files {
				st, err := os.Stat(f)
				if err != nil || st.Size() > limit {
					t.Errorf("%s: %d bytes, over the limit of %d", f, st.Size(), limit)
				}
				n, _, _, key := videoSpan(t, f)
				if !key {
					t.Errorf("%s does not start with a keyframe", f)
				}
				video += n
				p := cmdtest.Probe(t, f)
				all += p.Frames(t, "h264") + p.Frames(t, "aac")
				cmdtest.Decode(t, f)
			}
			if video < 300 || int64(all) != sum.Frames {
				t.Errorf("%d video frames over the files (want the 300 of 10 s), %d frames in all (the recording wrote %d)", video, all, sum.Frames)
			}
		})
	}
	t.Run("without {n}", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := cmdtest.Run(t, dir, "--demo-fast", "--duration", "10s", "--max-bytes", "150k", "-o", "one.mkv")
		if r.Code != 0 || !strings.Contains(r.Stderr, "recording cut") {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		st, err := os.Stat(filepath.Join(dir, "one.mkv"))
		if err != nil || st.Size() > limit || st.Size() < limit/2 {
			t.Errorf("one.mkv: %v %v; want under the limit of %d, and near it", st, err, limit)
		}
		cmdtest.Decode(t, filepath.Join(dir, "one.mkv"))
	})
}
