package units

import "testing"

func TestByteSizeNamesTheLargestUnitBelowTheSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1024, "1 KiB"},
		{12 * 1024, "12 KiB"},
		{300 << 20, "300 MiB"},
		{3 << 29, "1.5 GiB"},
	} {
		if got := ByteSize(tc.n); got != tc.want {
			t.Errorf("ByteSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
