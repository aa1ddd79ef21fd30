package export

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/mux"
)

func (e *Export) readCatalog() error {
	for !e.catEnded {
		cat, err := e.cat.Poll()
		switch {
		case cat != nil:
			if err := e.applyCatalog(cat); err != nil {
				return err
			}
			continue
		case err == nil:
			return nil
		case !errors.Is(err, io.EOF):
			e.log.Warn("catalog track ended with an error", "err", err)
		}
		e.catEnded = true
	}
	return nil
}

// applyCatalog adds the renditions that appeared and ends those that left.
func (e *Export) applyCatalog(cat *catalog.Catalog) error {
	seen := map[string]bool{}
	counts := map[mux.Kind]int{}
	for _, ts := range e.tracks {
		if !ts.ended {
			counts[ts.track.Kind]++
		}
	}
	var added []*trackState
	for _, r := range cat.Renditions() {
		seen[r.Name] = true
		ts, err := e.addRendition(r, counts)
		if err != nil {
			return err
		}
		if ts != nil {
			added = append(added, ts)
		}
	}
	// Every track this catalog brings was asked for: a source that starts
	// them together (an archive) need not wait for more.
	e.bc.Selected()
	// Text tracks are sparse: the start gate and the backfills, which
	// wait for a track's first frame, leave them out.
	media := slices.DeleteFunc(slices.Clone(added), func(ts *trackState) bool { return ts.track.Kind == mux.Text })
	late := e.gateUsed && e.gate == nil
	if len(media) > 0 && !e.gateUsed {
		e.gateUsed = true
		if e.opts.Delay > 0 {
			e.gate = &startGate{tracks: media, waiting: len(media), deadline: e.opts.Now().Add(e.startWait())}
			for _, ts := range media {
				ts.gated = true
				e.gateCheck(ts)
			}
		}
	}
	if late {
		for _, ts := range media {
			e.startLateFill(ts)
		}
	}
	for _, name := range cat.DataTracks() {
		if !e.dataNoted[name] {
			e.dataNoted[name] = true
			e.dataTracks++
			e.log.Info("data track not recorded: the catalog lists it as no media", "track", name)
		}
	}
	for name, ts := range e.tracks {
		if !seen[name] && !ts.ended {
			e.log.Info("rendition left the catalog", "track", name)
			ts.removed = true
			e.endTrack(ts)
		}
	}
	for _, want := range [][]string{e.opts.Video, e.opts.Audio, e.opts.Text} {
		for _, name := range want {
			if !seen[name] {
				e.log.Warn("requested rendition is not in the catalog (yet)", "track", name)
			}
		}
	}
	return nil
}

// addRendition adds rendition r and returns its track state, or nil when it
// was not added.
func (e *Export) addRendition(r catalog.Rendition, counts map[mux.Kind]int) (*trackState, error) {
	if existing, ok := e.tracks[r.Name]; ok && !existing.ended {
		if t := TrackFromRendition(r, existing.track.ID); !sameRendition(t, existing.track) {
			e.log.Warn("rendition changed its codec configuration; the container keeps the first one", "track", r.Name, "codec", t.Codec)
		}
		return nil, nil
	}
	if e.refused[r.Name] {
		return nil, nil
	}
	explicit := named(r, e.opts)
	skip := func(msg string, args ...any) {
		e.refused[r.Name] = true
		e.statsMu.Lock()
		e.stats.NotExported++
		e.statsMu.Unlock()
		e.log.Warn(msg, append([]any{"track", r.Name}, args...)...)
	}
	if err := Select(r, e.opts, counts); err != nil {
		switch {
		case errors.Is(err, ErrNotSelected):
			e.refused[r.Name] = true
		case errors.Is(err, ErrDisabled):
			// Not refused: a later catalog that enables it adds it.
			if !e.disabled[r.Name] {
				e.disabled[r.Name] = true
				e.log.Info("rendition disabled by its publisher: taken when it is enabled", "track", r.Name)
			}
		case explicit:
			return nil, fmt.Errorf("export: %w", err)
		default:
			skip("rendition not exported", "err", err)
		}
		return nil, nil
	}
	c := r.Common()
	bc := e.bc
	if c.Broadcast != nil && *c.Broadcast != "" {
		if e.opts.Resolve == nil {
			skip("rendition skipped: it lives in another broadcast", "broadcast", *c.Broadcast)
			return nil, nil
		}
		var err error
		if bc, err = e.opts.Resolve(*c.Broadcast); err != nil {
			skip("rendition skipped: its broadcast cannot be resolved", "broadcast", *c.Broadcast, "err", err)
			return nil, nil
		}
	}
	t := TrackFromRendition(r, e.nextID)
	e.nextID++
	if err := e.m.AddTrack(t); err != nil {
		if explicit && !errors.Is(err, mux.ErrLateTrack) {
			return nil, fmt.Errorf("export: rendition %q: %w", r.Name, err)
		}
		skip("rendition not exported", "err", err)
		return nil, nil
	}
	src, err := bc.Track(r.Name)
	if err != nil {
		_ = e.m.RemoveTrack(t.ID)
		skip("rendition not exported: cannot subscribe", "err", err)
		return nil, nil
	}
	ts := &trackState{track: t, plain: plainText(r)}
	ts.handed.Store(noTimestamp)
	if e.opts.CheckPayloads {
		ts.check = payloadCheck(t)
	}
	ts.consumer = src.Subscribe(e.opts.Latency)
	e.byCons[ts.consumer] = ts
	e.all = append(e.all, ts)
	for len(e.byID) <= t.ID { // IDs count up; a refused rendition leaves a nil
		e.byID = append(e.byID, nil)
	}
	e.byID[t.ID] = ts
	e.tracks[r.Name] = ts
	e.statsMu.Lock()
	if e.reading == nil {
		e.reading = map[string]*trackState{}
	}
	e.reading[r.Name] = ts
	e.statsMu.Unlock()
	if err := e.jit.AddTrack(t.ID, t.Kind); err != nil {
		return nil, err
	}
	counts[t.Kind]++
	e.live++
	ts.consumer.Watch(e.ready)
	e.log.Debug("exporting rendition", "track", r.Name, "codec", t.Codec, "id", t.ID)
	return ts, nil
}
