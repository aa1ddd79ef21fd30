package hls

import "testing"

func TestAPackagesFilesAreTheNamesItWritesAndNothingBesideThem(t *testing.T) {
	cases := []struct {
		state, name string
		want        bool
	}{
		{"index.state.json", "index.state.json", true},
		{"index.state.json", "index.m3u8", true},
		{"index.state.json", "index.mpd", true},
		{"show.state.json", "show.m3u8", true},
		{"show.state.json", "index.m3u8", false},
		{"index.state.json", "v0.m3u8", true},
		{"index.state.json", "a12.m3u8", true},
		{"index.state.json", "v0.mp4", true},
		{"index.state.json", "v0-init.mp4", true},
		{"index.state.json", "v1-init-2.mp4", true},
		{"index.state.json", "v0-00001.m4s", true},
		{"index.state.json", "a0-1234567.m4s", true},
		{"index.state.json", "s0-00003.vtt", true},
		{"index.state.json", ".v0.m3u8.tmp", true},
		{"index.state.json", ".index.state.json.tmp", true},
		{"index.state.json", "alice-20260101T000000Z.mkv", false},
		{"index.state.json", "alice.mp4", false},
		{"index.state.json", "v.mp4", false},
		{"index.state.json", "x0.mp4", false},
		{"index.state.json", "v0-init-.mp4", false},
		{"index.state.json", "v0-.m4s", false},
		{"index.state.json", "v0.ts", false},
		{"index.state.json", "notes.txt", false},
		{"index.state.json", ".alice.mp4", false},
		{"index.m3u8", "index.m3u8", false},
	}
	for _, tc := range cases {
		if got := InPackage(tc.state, tc.name); got != tc.want {
			t.Errorf("InPackage(%q, %q) = %v, want %v", tc.state, tc.name, got, tc.want)
		}
	}
}
