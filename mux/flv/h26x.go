package flv

import (
	"errors"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// annexBConverter turns Annex B access units into length-prefixed NAL
// units and reports the configuration record built from the in-band
// parameter sets whenever it changes.
type annexBConverter interface {
	Convert(au []byte) (avcc, config []byte, changed bool, err error)
}

// dtsEstimator gives decode times (µs) for presentation times that come in
// decode order.
type dtsEstimator interface {
	DTS(pts int64) int64
	Delay() int64
	Reset()
}

func newAnnexBConverter(fam string) (annexBConverter, error) {
	return nil, errors.New("annex b: not yet")
}

type reserveDTS struct {
	delay, last int64
	has         bool
}

func newDTSEstimator(t mux.Track) dtsEstimator {
	d := t.Jitter
	if d == 0 {
		d = 100 * time.Millisecond
	}
	return &reserveDTS{delay: d.Microseconds()}
}

func (r *reserveDTS) DTS(pts int64) int64 {
	d := pts - r.delay
	if r.has && d <= r.last {
		d = r.last + 1
	}
	r.last, r.has = d, true
	return d
}
func (r *reserveDTS) Delay() int64 { return r.delay }
func (r *reserveDTS) Reset()       { r.has = false }
