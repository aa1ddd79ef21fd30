package session

// WindowSize is how many group sequences below the newest one a
// GroupWindow remembers one by one: groups further back are taken as
// arrived. A group that far behind is not in flight any more (hang's audio
// sends ~47 groups a second, so the window is ~11 s of it).
const WindowSize = 512

// GroupWindow records which groups of a subscription arrived, in constant
// space: a bitmap of the WindowSize sequences below the newest one.
// A map of every sequence seen grew by one entry per group for the life of
// the subscription (per audio frame, 25 MB in 30 s for 1,000 recordings).
// Its zero value is empty.
type GroupWindow struct {
	bits  [WindowSize / 64]uint64
	top   uint64 // one past the newest sequence added; 0: none yet
	count uint64 // distinct sequences added
}

// Add records seq; adding one twice counts it once.
func (w *GroupWindow) Add(seq uint64) {
	switch {
	case w.top == 0 || seq >= w.top+WindowSize:
		w.bits = [WindowSize / 64]uint64{}
		w.top = seq + 1
	case seq >= w.top:
		for s := w.top; s <= seq; s++ {
			w.bits[s%WindowSize/64] &^= 1 << (s % 64)
		}
		w.top = seq + 1
	case w.top-seq > WindowSize:
		return // older than the window: taken as seen already
	}
	i, bit := seq%WindowSize/64, uint64(1)<<(seq%64)
	if w.bits[i]&bit == 0 {
		w.bits[i] |= bit
		w.count++
	}
}

// Count is how many distinct sequences were added.
func (w *GroupWindow) Count() uint64 { return w.count }

// Has reports whether seq arrived; sequences below the window count as
// arrived.
func (w *GroupWindow) Has(seq uint64) bool {
	switch {
	case w.top == 0 || seq >= w.top:
		return false
	case w.top-seq > WindowSize:
		return true
	}
	return w.bits[seq%WindowSize/64]&(1<<(seq%64)) != 0
}
