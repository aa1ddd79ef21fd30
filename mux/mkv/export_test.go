package mkv

// Counters and Writer.Counters give the tests the detailed counters.
type Counters = counters

func (w *Writer) Counters() Counters { return w.detail() }
