package hls

// Counters and Writer.Counters give the tests the detailed counters.
type Counters = counters

func (w *Writer) Counters() Counters { return w.detail() }

// ReferenceMPD is the MPD the Writer would write now, as dash-mpd's own
// (reflection) writer writes the same document: what the tests hold the
// Writer's byte writer (marshalMPD) to.
func (w *Writer) ReferenceMPD(final bool) (string, error) {
	return w.mpdDoc(final).WriteToString("  ", true)
}
