package jitter

// trackHeap is a binary min-heap of tracks that keeps each track's position
// in the heap (for removal), with no allocation per operation.
type trackHeap struct {
	items []*track
	less  func(a, b *track) bool
	// pos selects which index field of track this heap maintains.
	pos func(t *track) *int
}

func (h *trackHeap) len() int { return len(h.items) }

func (h *trackHeap) min() *track { return h.items[0] }

func (h *trackHeap) push(t *track) {
	*h.pos(t) = len(h.items)
	h.items = append(h.items, t)
	h.up(len(h.items) - 1)
}

func (h *trackHeap) remove(t *track) {
	i := *h.pos(t)
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	*h.pos(t) = -1
	if i != last {
		h.fix(i)
	}
}

// fix restores the heap after the key of the item at i changed.
func (h *trackHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *trackHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = i
	*h.pos(h.items[j]) = j
}

func (h *trackHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *trackHeap) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			j = r
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
