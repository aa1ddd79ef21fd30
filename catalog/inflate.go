package catalog

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
)

// syncFlushTail is the empty stored block a DEFLATE sync flush ends with;
// catalog.json.z frames omit it and readers append it back.
var syncFlushTail = []byte{0x00, 0x00, 0xff, 0xff}

// maxInflated bounds one inflated catalog frame, so a hostile peer cannot
// make us allocate without limit.
const maxInflated = 4 << 20

// Inflater decompresses the frames of one catalog.json.z group. Each group
// is one raw DEFLATE stream, sync-flushed at every frame boundary; each frame
// omits the trailing 00 00 ff ff. Use a new Inflater for every group.
//
// compress/flate keeps its first read error for good, so a reader cannot be
// resumed when the next frame arrives. Catalog groups are small (in practice
// one frame), so Inflater re-inflates the group's input from the start and
// returns what the new frame added.
type Inflater struct {
	in      []byte
	emitted int
}

// Frame returns the bytes that frame (the next one in the group) inflates to.
func (z *Inflater) Frame(frame []byte) ([]byte, error) {
	z.in = append(z.in, frame...)
	z.in = append(z.in, syncFlushTail...)
	r := flate.NewReader(bytes.NewReader(z.in))
	defer r.Close()
	var out bytes.Buffer
	_, err := io.Copy(&out, io.LimitReader(r, maxInflated+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("catalog: inflate: %w", err)
	}
	if out.Len() > maxInflated {
		return nil, errors.New("catalog: inflated group too large")
	}
	if out.Len() < z.emitted {
		return nil, errors.New("catalog: inflate: stream went backwards")
	}
	data := bytes.Clone(out.Bytes()[z.emitted:])
	z.emitted = out.Len()
	return data, nil
}

// Deflater compresses catalog frames the way a hang publisher does, for
// tests and for the built-in publisher.
type Deflater struct {
	buf bytes.Buffer
	w   *flate.Writer
}

// Frame compresses one frame, sync-flushes, and returns it without the
// 00 00 ff ff tail.
func (d *Deflater) Frame(data []byte) ([]byte, error) {
	if d.w == nil {
		w, err := flate.NewWriter(&d.buf, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		d.w = w
	}
	d.buf.Reset()
	if _, err := d.w.Write(data); err != nil {
		return nil, err
	}
	if err := d.w.Flush(); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(d.buf.Bytes(), syncFlushTail)
	return bytes.Clone(out), nil
}
