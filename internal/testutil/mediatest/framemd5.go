package mediatest

import (
	"strings"
	"testing"
)

// FrameMD5 is ffmpeg's per-packet listing of every stream of path
// (stream, dts, pts, duration, size, MD5 of the bytes), one line a
// packet, without the header: two files whose listings are equal hold the
// same packets at the same times.
func FrameMD5(t testing.TB, path string) []string {
	t.Helper()
	out, _ := Run(t, "ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "framemd5", "-")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}
