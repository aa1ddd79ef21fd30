package session

import "testing"

func TestGroupWindow(t *testing.T) {
	const w = WindowSize
	tests := []struct {
		name      string
		add       []uint64
		has, not  []uint64
		wantCount uint64
	}{
		{name: "empty", not: []uint64{0, 1, 1 << 40}},
		{name: "in order", add: []uint64{0, 1, 2}, has: []uint64{0, 1, 2}, not: []uint64{3}, wantCount: 3},
		{name: "out of order with a hole", add: []uint64{5, 3, 7}, has: []uint64{3, 5, 7}, not: []uint64{4, 6, 8}, wantCount: 3},
		{name: "twice counts once", add: []uint64{9, 9, 8, 9}, has: []uint64{8, 9}, wantCount: 2},
		{name: "below the window counts as arrived", add: []uint64{0, w + 10}, has: []uint64{0, 5, 10, w + 10}, not: []uint64{11, w + 9}, wantCount: 2},
		{name: "older than the window is not counted", add: []uint64{w + 10, 3}, has: []uint64{3}, wantCount: 1},
		{name: "a jump clears the window", add: []uint64{1, 2, 3, 3 * w}, has: []uint64{3 * w}, not: []uint64{3*w - 1, 3*w - 2}, wantCount: 4},
		{name: "sliding reuses bits", add: []uint64{1, w + 2}, has: []uint64{w + 2, 1}, not: []uint64{w + 1, 3, 2 * w}, wantCount: 2},
		{name: "first group far along", add: []uint64{1 << 40, 1<<40 + 2}, has: []uint64{1 << 40, 1<<40 + 2}, not: []uint64{1<<40 + 1}, wantCount: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gw GroupWindow
			for _, s := range tt.add {
				gw.Add(s)
			}
			for _, s := range tt.has {
				if !gw.Has(s) {
					t.Errorf("has(%d) = false after %v", s, tt.add)
				}
			}
			for _, s := range tt.not {
				if gw.Has(s) {
					t.Errorf("has(%d) = true after %v", s, tt.add)
				}
			}
			if gw.count != tt.wantCount {
				t.Errorf("count = %d, want %d", gw.count, tt.wantCount)
			}
		})
	}
}

// A long subscription in order: every group inside the window is known
// one by one, and the window stays the same size.
func TestGroupWindowLongRun(t *testing.T) {
	var gw GroupWindow
	for s := uint64(0); s < 100*WindowSize; s += 2 {
		gw.Add(s)
		if !gw.Has(s) || (s > 0 && gw.Has(s-1)) {
			t.Fatalf("at %d: has(%d)=%v has(%d)=%v", s, s, gw.Has(s), s-1, gw.Has(s-1))
		}
	}
	if gw.count != 50*WindowSize {
		t.Fatalf("count = %d", gw.count)
	}
}
