package objstore

import "testing"

// cluster is the start of an MKV Cluster of unknown size at ms, as the
// muxer writes it, followed by a SimpleBlock header of track 1.
func cluster(ms byte, key bool) []byte {
	b := []byte{0x1F, 0x43, 0xB6, 0x75, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xE7, 0x81, ms}
	return append(b, block(key)...)
}

// block is a SimpleBlock of track 1 holding 3 bytes.
func block(key bool) []byte {
	flags := byte(0)
	if key {
		flags = 0x80
	}
	return []byte{0xA3, 0x87, 0x81, 0x00, 0x00, flags, 1, 2, 3}
}

// tag is an FLV tag of type typ whose body begins with body.
func tag(typ byte, body ...byte) []byte {
	return append([]byte{typ, 0, 0, byte(len(body)), 0, 0, 0, 0, 0, 0, 0}, body...)
}

func TestSniffersTellHeaderMediaAndSyncPointsApart(t *testing.T) {
	flv := &flvSniffer{}
	audioOnly := &flvSniffer{}
	for _, tc := range []struct {
		name  string
		sniff sniffer
		write []byte
		want  writeKind
	}{
		{"an MP4 ftyp and moov are the header", sniffMP4, []byte("\x00\x00\x00\x18ftypiso5"), writeHeader},
		{"an MP4 fragment is a sync point", sniffMP4, []byte("\x00\x00\x01\x00moof\x00\x00\x00\x10mfhd"), writeSync},
		{"a short MP4 write is the header", sniffMP4, []byte("moof"), writeHeader},
		{"the MKV EBML header is the header", sniffMKV, []byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F}, writeHeader},
		{"an MKV Cluster opened by a keyframe is a sync point", sniffMKV, cluster(5, true), writeSync},
		{"an MKV Cluster opened by a delta frame is media", sniffMKV, cluster(5, false), writeMedia},
		{"an MKV block is media", sniffMKV, block(true), writeMedia},
		{"a truncated MKV Cluster is media", sniffMKV, cluster(5, true)[:14], writeMedia},
		{"MKV Cues are the header (not media)", sniffMKV, []byte{0x1C, 0x53, 0xBB, 0x6B, 0x80}, writeHeader},
		{"the FLV file header is the header", flv.sniff, []byte{'F', 'L', 'V', 1, 0x05, 0, 0, 0, 9, 0, 0, 0, 0}, writeHeader},
		{"FLV script data is the header", flv.sniff, tag(18, 2, 0, 10), writeHeader},
		{"an AVC sequence header is the header", flv.sniff, tag(9, 0x17, 0, 0, 0, 0), writeHeader},
		{"an AVC keyframe is a sync point", flv.sniff, tag(9, 0x17, 1, 0, 0, 0), writeSync},
		{"an AVC inter frame is media", flv.sniff, tag(9, 0x27, 1, 0, 0, 0), writeMedia},
		{"an enhanced HEVC sequence start is the header", flv.sniff, tag(9, 0x90, 'h', 'v', 'c', '1'), writeHeader},
		{"an enhanced coded keyframe is a sync point", flv.sniff, tag(9, 0x91, 'h', 'v', 'c', '1'), writeSync},
		{"an enhanced coded inter frame is media", flv.sniff, tag(9, 0xA3, 'a', 'v', '0', '1'), writeMedia},
		{"an AAC sequence header is the header", flv.sniff, tag(8, 0xAF, 0, 0x12, 0x10), writeHeader},
		{"an AAC frame with video is media", flv.sniff, tag(8, 0xAF, 1, 0x21), writeMedia},
		{"an enhanced audio sequence start is the header", flv.sniff, tag(8, 0x90, 'O', 'p', 'u', 's'), writeHeader},
		{"the header of an audio-only FLV", audioOnly.sniff, []byte{'F', 'L', 'V', 1, 0x04, 0, 0, 0, 9, 0, 0, 0, 0}, writeHeader},
		{"an AAC frame without video is a sync point", audioOnly.sniff, tag(8, 0xAF, 1, 0x21), writeSync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sniff(tc.write); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOnlyMP4MKVAndFLVKeysAreSniffed(t *testing.T) {
	for key, want := range map[string]bool{"a/b.mp4": true, "b.MKV": true, "c.webm": true, "d.flv": true, "e.ts": false, "f.m3u8": false, "g": false} {
		if got := snifferFor(key) != nil; got != want {
			t.Errorf("%s: sniffed %v, want %v", key, got, want)
		}
	}
}

// FuzzSniffers: no write makes a sniffer panic or read out of bounds.
func FuzzSniffers(f *testing.F) {
	f.Add(cluster(1, true))
	f.Add(tag(9, 0x17, 1, 0, 0, 0))
	f.Add([]byte("\x00\x00\x01\x00moof"))
	f.Add([]byte{0x1F, 0x43, 0xB6, 0x75, 0x00})
	f.Fuzz(func(t *testing.T, p []byte) {
		sniffMP4(p)
		sniffMKV(p)
		(&flvSniffer{}).sniff(p)
		(&flvSniffer{audioOnly: true}).sniff(p)
	})
}
