package cmdtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestDecodingAtFileTimesTellsARoundedTickFromARepeatedFrame checks the
// decode every recording test relies on with files ffmpeg itself makes: a
// 30 fps H.264 MP4 on a 90 kHz timescale whose timestamps are then moved
// as a publisher restart and a publisher's microsecond clock move ours.
func TestDecodingAtFileTimesTellsARoundedTickFromARepeatedFrame(t *testing.T) {
	NeedTools(t, "ffmpeg")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.mp4")
	mediatest.Run(t, "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-t", "10",
		"-c:v", "libx264", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p",
		"-video_track_timescale", "90000", base)

	tests := []struct {
		name string
		// setts is the expression that moves each packet's times (N is the
		// packet's number, TS its time in 90 kHz ticks; a frame lasts 3000).
		setts string
		// rounded: ffmpeg's null output at the nominal 30 fps complains.
		rounded bool
		// cut: how many bytes are cut off the end of the file.
		cut int64
		// fails: the decode at the file's times must complain.
		fails      bool
		failsShort bool
	}{
		{
			// The eleventh soak's failure: after frame 150 the timeline is
			// half a frame off the file's start, and frame 200 comes 2999
			// ticks after frame 199; at 1/30 s both round onto one tick.
			name:    "a timeline half a frame off with a frame one tick early decodes at the file's times",
			setts:   `if(gte(N\,150)\,TS+1500-eq(N\,200)\,TS)`,
			rounded: true,
		},
		{
			name:  "frames on their ticks decode",
			setts: `TS`,
		},
		{
			// A repeated frame: 200 is one tick after 199.
			name:       "two frames a tick apart fail at the file's times too",
			setts:      `if(eq(N\,200)\,TS-2999\,TS)`,
			rounded:    true,
			fails:      true,
			failsShort: true,
		},
		{
			name:       "a file cut inside its last frame decodes only as cut short",
			setts:      `TS`,
			cut:        700,
			fails:      true,
			failsShort: false,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "case"+string(rune('a'+i))+".mp4")
			// faststart puts the moov first, so that a cut leaves an index
			// that reads.
			mediatest.Run(t, "ffmpeg", "-nostdin", "-v", "error", "-y", "-i", base, "-c", "copy", "-bsf:v", "setts=ts="+tt.setts,
				"-video_track_timescale", "90000", "-movflags", "+faststart", path)
			if tt.cut > 0 {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(path, st.Size()-tt.cut); err != nil {
					t.Fatal(err)
				}
			}
			out, _ := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-").CombinedOutput()
			if rounded := strings.Contains(string(out), "non monotonically increasing dts"); rounded != tt.rounded {
				t.Fatalf("ffmpeg's null output at 30 fps complains %v, the case needs %v:\n%s", rounded, tt.rounded, out)
			}
			for _, short := range []bool{false, true} {
				complaints, cut, err := decodeAtFileTimes(path, short)
				want := tt.fails
				if short {
					want = tt.failsShort
				}
				if failed := err != nil || complaints != ""; failed != want {
					t.Errorf("cut short allowed %v: failed %v, want %v (%v)\n%s\ncut short: %s", short, failed, want, err, complaints, cut)
				}
				if short && tt.cut > 0 && cut == "" {
					t.Errorf("a cut file decoded without a word of its cut")
				}
			}
		})
	}
}
