package record

import (
	"fmt"
	"io"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// open opens output number n of recording rec: a File of the Output with
// a muxer of the Format over it, that ends the recording when the file
// reaches a limit.
func (r *Recorder) open(rec *Recording, n int) (mux.Muxer, error) {
	if po, ok := r.opts.Output.(PackageOutput); ok && r.opts.Format.Package() {
		return r.openPackage(rec, po)
	}
	name := rec.name
	start := rec.fileStart(n)
	f, err := r.opts.Output.Create(name, n, start)
	if err != nil {
		return nil, err
	}
	path := ""
	if lf, ok := f.(LocalFile); ok {
		path = lf.LocalPath() // MP4 finishes a real file in place
	}
	cw := &countWriter{w: f}
	var w io.Writer = cw
	if s, ok := f.(io.Seeker); ok {
		w = &countWriteSeeker{countWriter: cw, s: s}
	}
	rec.mu.Lock()
	wall := rec.wall
	rec.mu.Unlock()
	mo := MuxOptions{Path: path, KeepTimestamps: r.opts.KeepTimestamps, Logger: r.log.With("output", f.Name()), Compact: r.opts.MaxFileBytes > 0, WallClock: wall}
	if rf, ok := f.(RemoteFile); ok {
		mo.FinishHead = rf.FinishHead
	}
	m, err := r.newMuxer(w, mo)
	if err != nil {
		f.Close()
		return nil, err
	}
	info := FileInfo{Path: f.Name(), Broadcast: name, Segment: n, Format: string(r.opts.Format), Start: start.UTC()}
	if rf, ok := f.(RemoteFile); ok {
		info.URL = rf.URL()
	}
	r.log.Info("writing", "path", info.Path, "format", r.opts.Format, "broadcast", name, "segment", n)
	rec.fileOpened(info)
	if r.opts.OnFile != nil {
		r.opts.OnFile(FileEvent{File: info, Recording: rec})
	}
	o := &output{Muxer: m, file: f, count: cw, info: info, r: r, rec: rec, cut: rec.cancel}
	rec.out = o
	return o, nil
}

// output is a muxer with its File under it: closing it finalizes the
// container, then closes the file and reports it finished.
type output struct {
	mux.Muxer
	file   File
	count  *countWriter
	info   FileInfo
	r      *Recorder
	rec    *Recording
	frames int64
	first  int64
	last   int64
	have   bool
	spans  []trackSpan // per track, for the duration with the last frame
	// end is the latest end (last frame's time plus its duration) of any
	// track's span (noteEnd); haveEnd: some track has a frame.
	end     int64
	haveEnd bool
	// The size limit (limits.go).
	kinds    []trackKind
	hasVideo bool
	size     sizeGuard
	// cut ends the recording at a limit; checkedAt is the size at the
	// last look at the free space (limits.go).
	cut       func(error)
	checkedAt int64
}

// AddTrack warns, when FLV takes a codec only as Enhanced FLV, that older
// players cannot read it.
func (o *output) AddTrack(t mux.Track) error {
	err := o.Muxer.AddTrack(t)
	if err == nil {
		o.spans = append(o.spans, trackSpan{id: t.ID, nominal: nominalFrame(t)})
		o.kinds = append(o.kinds, trackKind{t.ID, t.Kind})
		o.hasVideo = o.hasVideo || t.Kind == mux.Video
	}
	if err == nil && o.info.Format == string(FLV) && o.info.Segment == 0 && EnhancedFLV(t.Codec) {
		o.r.log.Warn(fmt.Sprintf("writing %s as Enhanced FLV", t.Codec), "output", o.info.Path, "err", ErrEnhancedFLV)
	}
	return err
}

func (o *output) WriteFrame(f mux.Frame) error {
	if o.sizeCapped(f) {
		return nil // not written: the file is at its size limit
	}
	if names := o.rec.takeChapters(); len(names) > 0 {
		o.chapters(f.Timestamp, names)
	}
	before := o.count.n
	err := o.Muxer.WriteFrame(f)
	o.noteSize(f, before)
	if err == nil {
		o.frames++
		if !o.have || f.Timestamp < o.first {
			o.first = f.Timestamp
		}
		if !o.have || f.Timestamp > o.last {
			o.last = f.Timestamp
		}
		o.have = true
		o.noteSpan(f)
		o.rec.fileProgress(o.count.n, o.frames, o.media())
		o.checkOutput()
	}
	return err
}

// EndFrame passes where a track's last frame ends (hang's end marker) to
// a muxer that keeps frame durations (mux.FrameEnder).
func (o *output) EndFrame(id int, end int64) error { return endFrame(o.Muxer, id, end) }

// endFrame passes where a track's last frame ends to m when it keeps frame
// durations (mux.FrameEnder); nothing otherwise.
func endFrame(m mux.Muxer, id int, end int64) error {
	if fe, ok := m.(mux.FrameEnder); ok {
		return fe.EndFrame(id, end)
	}
	return nil
}

func (o *output) Close() error {
	err := o.Muxer.Close()
	if cerr := o.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", o.info.Path, cerr)
	}
	o.r.log.Info("output finished", "path", o.info.Path)
	info := o.info
	// What the container holds: a muxer may still drop a frame it
	// accepted (MPEG-TS: audio before the video's first keyframe).
	info.Frames = max(0, o.frames-o.Muxer.Stats().Dropped)
	if o.have {
		info.Media = o.media()
	}
	info.Size = o.count.n
	if sz, ok := o.file.(SizedFile); ok {
		info.Size = sz.Size()
	}
	o.r.mu.Lock()
	o.r.files = append(o.r.files, info)
	o.r.mu.Unlock()
	o.rec.fileFinished(info)
	if o.r.opts.OnFile != nil {
		o.r.opts.OnFile(FileEvent{Finished: true, File: info, Err: err, Recording: o.rec})
	}
	return err
}

// trackSpan follows one track of an output: its latest presentation time
// and its frame duration (the smallest gap between frames seen, or before
// a second frame the track's nominal one), so the file's duration counts
// its last frame as ffprobe does.
type trackSpan struct {
	id            int
	last, prev    int64
	minGap        int64
	nominal       int64
	have, hasPrev bool
}

// nominalFrame is a track's frame duration (µs) before its frames tell:
// a frame at its frame rate, or 1024 samples of audio (AAC's frame).
func nominalFrame(t mux.Track) int64 {
	switch {
	case t.Framerate > 0:
		return int64(1e6 / t.Framerate)
	case t.SampleRate > 0:
		return 1024 * 1_000_000 / int64(t.SampleRate)
	}
	return 0
}

func (o *output) noteSpan(f mux.Frame) {
	for i := range o.spans {
		s := &o.spans[i]
		if s.id != f.TrackID {
			continue
		}
		gap := s.gap()
		if s.hasPrev {
			// In decode order (B-frames) a step can go back: the smallest
			// step forward is one frame.
			if d := f.Timestamp - s.prev; d > 0 && (s.minGap == 0 || d < s.minGap) {
				s.minGap = d
			}
		}
		s.prev, s.hasPrev = f.Timestamp, true
		if !s.have || f.Timestamp > s.last {
			s.last, s.have = f.Timestamp, true
		}
		if s.gap() != gap {
			// Its frame duration changed: the latest end is found again.
			o.end, o.haveEnd = 0, false
			for j := range o.spans {
				o.noteEnd(&o.spans[j])
			}
		} else {
			o.noteEnd(s)
		}
		return
	}
}

// gap is the track's frame duration: the smallest step seen, else its
// nominal one.
func (s *trackSpan) gap() int64 {
	if s.minGap != 0 {
		return s.minGap
	}
	return s.nominal
}

// noteEnd takes s's end (its last frame's time plus its duration) into
// the latest end of any track. A track's end only moves later while its
// duration stays (its last time only grows), so only a change of
// duration makes noteSpan look at every track again.
func (o *output) noteEnd(s *trackSpan) {
	if !s.have {
		return
	}
	if e := s.last + s.gap(); !o.haveEnd || e > o.end {
		o.end, o.haveEnd = e, true
	}
}

// media is the output's duration in seconds, rounded to the millisecond:
// from its first frame to the end of its last (the latest end of any
// track), as a player shows it. Per frame, it costs the same whatever the
// number of tracks (noteEnd keeps the latest end).
func (o *output) media() float64 {
	end := o.last
	if o.haveEnd {
		end = max(end, o.end)
	}
	return float64((end-o.first+500)/1000) / 1e3
}

// chapters marks timestamp ts (the next frame's) with chapters named
// names, when the muxer can (mux.Chapterer); Recording.Chapter checked the
// format.
func (o *output) chapters(ts int64, names []string) {
	c, ok := o.Muxer.(mux.Chapterer)
	if !ok {
		return
	}
	for _, name := range names {
		if err := c.Chapter(ts, name); err != nil {
			o.r.log.Warn("chapter not written", "output", o.info.Path, "chapter", name, "err", err)
			continue
		}
		o.r.log.Info("chapter", "output", o.info.Path, "chapter", name, "at", time.Duration(ts)*time.Microsecond)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Flush passes a muxer's Flush on (MP4 asks for one after each fragment),
// when the output has one, except to a SelfFlushingFile (FileOutput, the
// object store's spool): it sends its writes on in large blocks by itself,
// and a flush per fragment would cut them to the fragment's size (tens of
// kB for 2 s of video), which costs the kernel about twice the CPU of
// writes of a quarter megabyte or more (page cache folios;
// BenchmarkExportAnHour).
func (c *countWriter) Flush() error {
	if flushesItself(c.w) {
		return nil
	}
	if f, ok := c.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// countWriteSeeker is a countWriter that passes Seek on, so that muxers
// still finalize.
type countWriteSeeker struct {
	*countWriter
	s io.Seeker
}

func (c *countWriteSeeker) Seek(offset int64, whence int) (int64, error) {
	return c.s.Seek(offset, whence)
}
