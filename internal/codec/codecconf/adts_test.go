package codecconf

import "testing"

func TestIsADTSTellsAnADTSFrameFromRawAAC(t *testing.T) {
	adts := func(n int) []byte {
		p := make([]byte, n)
		copy(p, []byte{0xff, 0xf1, 0x50, 0x80, byte(n >> 3), byte(n<<5) | 0x1f, 0xfc})
		return p
	}
	for _, tt := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"ADTSFrame", adts(20), true},
		{"ADTSHeaderOfAnotherLength", adts(20)[:19], false},
		{"RawAAC", []byte{0x21, 0x10, 0x05, 0x00, 0xa0, 0x19, 0x33, 0x87}, false},
		{"Short", []byte{0xff, 0xf1}, false},
	} {
		if got := IsADTS(tt.p); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
