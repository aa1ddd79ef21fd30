package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

// TestSlabCutsPayloadsThatStayApart reads groups of frames through a Slab
// and checks every payload against what was written, after appending to
// each payload (which must not reach its neighbour), and how many buffers
// the slab allocated for them.
func TestSlabCutsPayloadsThatStayApart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		sizes         []int
		hint          int
		wantBuffers   int // the payloads were cut from (a frame above a chunk is one)
		wantPayloads  int
		wantUsedBytes int
	}{
		{"30 frames of 4 KB, hinted", repeat(4096, 30), 30 * 4096, 1, 30, 30 * 4096},
		{"a bigger group than hinted", repeat(4096, 40), 30 * 4096, 2, 40, 40 * 4096},
		{"no hint: grows by half", repeat(1000, 30), 0, 10, 30, 30 * 1000},
		{"one small frame", []int{200}, 200, 1, 1, 200},
		{"an empty frame", []int{0, 10}, 0, 1, 2, 10},
		{"above a chunk: its own allocation", []int{100, 70 << 10, 100}, 300, 2, 3, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stream []byte
			var want [][]byte
			for i, n := range tc.sizes {
				p := bytes.Repeat([]byte{byte(i + 1)}, n)
				want = append(want, p)
				stream = AppendFrame(stream, 33, p)
			}
			fr := &FrameReader{R: bufio.NewReaderSize(bytes.NewReader(stream), 1<<17), Slab: Slab{Hint: tc.hint}, UseSlab: true}
			var got [][]byte
			for {
				p, err := fr.Next()
				if err != nil {
					break
				}
				got = append(got, p)
			}
			buffers := countBuffers(got)
			if len(got) != tc.wantPayloads {
				t.Fatalf("%d payloads, want %d", len(got), tc.wantPayloads)
			}
			for i := range got {
				got[i] = append(got[i], 0xee) // must not land in got[i+1]
			}
			for i := range got {
				if !bytes.Equal(got[i][:len(got[i])-1], want[i]) {
					t.Fatalf("payload %d changed: %s", i, summary(got[i]))
				}
			}
			if fr.Slab.Used() != tc.wantUsedBytes {
				t.Errorf("Used %d, want %d", fr.Slab.Used(), tc.wantUsedBytes)
			}
			if buffers != tc.wantBuffers {
				t.Errorf("payloads in %d buffers, want %d", buffers, tc.wantBuffers)
			}
		})
	}
}

// countBuffers returns how many buffers the payloads lie in: a payload
// that does not start where an earlier one ended starts a buffer (the
// garbage collector does not move objects).
func countBuffers(payloads [][]byte) int {
	ends := map[uintptr]bool{}
	n := 0
	for _, p := range payloads {
		if len(p) == 0 {
			continue
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
		if !ends[start] {
			n++
		}
		ends[start+uintptr(len(p))] = true
	}
	return n
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}

func summary(p []byte) string {
	if len(p) > 8 {
		return fmt.Sprintf("%x... (%d bytes)", p[:8], len(p))
	}
	return fmt.Sprintf("%x", p)
}
