package subscribe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// CatalogOptions configure WatchCatalog.
type CatalogOptions struct {
	// Track forces the catalog track name (catalog.json, catalog.json.z or
	// catalog). Default: catalog for broadcast names ending in ".msf",
	// otherwise catalog.json.
	Track string
}

// CatalogWatcher follows the catalog of one broadcast. It is used by one
// goroutine.
type CatalogWatcher struct {
	track string
	cons  *model.Consumer
	ready *model.ReadySet

	group    uint64
	inGroup  bool
	doc      map[string]any // the group's document so far
	inflater *catalog.Inflater
	latest   *catalog.Catalog
	fresh    bool
	lastErr  error
	ended    error
}

// WatchCatalog subscribes the catalog track of b and returns a watcher.
// It works with any model broadcast: one from Session.Broadcast, or a local
// one.
func WatchCatalog(b *model.Broadcast, opts CatalogOptions) (*CatalogWatcher, error) {
	name := opts.Track
	if name == "" {
		name = catalog.TrackName
		if strings.HasSuffix(b.Name(), ".msf") {
			name = catalog.MSFTrackName
		}
	}
	t, err := b.Track(name)
	if err != nil {
		return nil, fmt.Errorf("catalog of %q: %w", b.Name(), err)
	}
	w := &CatalogWatcher{track: name, cons: t.Subscribe(0), ready: model.NewReadySet()}
	w.cons.Watch(w.ready)
	return w, nil
}

// Next returns the newest catalog snapshot not returned yet, waiting for
// one until ctx ends. Snapshots overtaken by newer ones are never returned;
// a malformed snapshot is skipped (Next returns it as an error only when
// nothing valid follows and the track ends). After the catalog track ends,
// Next returns its error, or io.EOF for a clean end.
func (w *CatalogWatcher) Next(ctx context.Context) (*catalog.Catalog, error) {
	for {
		w.drain()
		if w.fresh {
			w.fresh = false
			return w.latest, nil
		}
		if w.ended != nil {
			return nil, w.ended
		}
		select {
		case <-w.ready.Wakeup():
			w.ready.Take(nil)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Close stops watching.
func (w *CatalogWatcher) Close() { w.cons.Close() }

// drain reads every available event and keeps the newest snapshot.
func (w *CatalogWatcher) drain() {
	for w.ended == nil {
		ev, ok := w.cons.Next()
		if !ok {
			return
		}
		switch ev.Kind {
		case model.EventEnd:
			w.ended = ev.Err
			if w.ended == nil {
				w.ended = io.EOF
			}
			if w.lastErr != nil && !w.fresh && w.latest == nil {
				w.ended = fmt.Errorf("catalog: %w (track ended: %w)", w.lastErr, w.ended)
			}
		case model.EventDiscontinuity:
			w.inGroup = false
		case model.EventFrame:
			if err := w.frame(ev); err != nil {
				w.lastErr = err
			}
		}
	}
}

// frame applies one catalog frame: the first frame of a group is a full
// snapshot, later ones are JSON merge patches (RFC 7396).
func (w *CatalogWatcher) frame(ev model.Event) error {
	start := ev.Keyframe || !w.inGroup || ev.Group != w.group
	if start {
		w.group, w.inGroup, w.doc = ev.Group, true, nil
		w.inflater = &catalog.Inflater{}
	}
	data := ev.Frame.Payload
	if w.track == catalog.CompressedTrackName {
		var err error
		if data, err = w.inflater.Frame(data); err != nil {
			w.inGroup = false
			return err
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		if start {
			w.inGroup = false
		}
		return &catalog.SyntaxError{Err: err}
	}
	if start {
		m, ok := v.(map[string]any)
		if !ok {
			w.inGroup = false
			return &catalog.SyntaxError{Err: errors.New("catalog is not a JSON object")}
		}
		w.doc = m
	} else {
		m, ok := mergePatch(w.doc, v).(map[string]any)
		if !ok {
			return &catalog.SyntaxError{Err: errors.New("patch made the catalog a non-object")}
		}
		w.doc = m
	}
	var c *catalog.Catalog
	var err error
	if w.track == catalog.MSFTrackName {
		c, err = fromMSF(w.doc)
	} else {
		raw, merr := json.Marshal(w.doc)
		if merr != nil {
			return merr
		}
		c, err = catalog.Parse(raw)
	}
	if err != nil {
		return err
	}
	w.latest, w.fresh = c, true
	return nil
}

// mergePatch applies an RFC 7396 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	} else {
		c := make(map[string]any, len(t))
		for k, v := range t {
			c[k] = v
		}
		t = c
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// msfTrack is the part of an MSF (draft-ietf-moq-msf-01, and draft-00)
// track entry the conversion reads.
type msfTrack struct {
	Name          string   `json:"name"`
	Packaging     string   `json:"packaging"`
	Role          string   `json:"role"`
	Codec         string   `json:"codec"`
	Width         *uint32  `json:"width"`
	Height        *uint32  `json:"height"`
	Framerate     *float64 `json:"framerate"`
	Samplerate    *uint32  `json:"samplerate"`
	ChannelConfig string   `json:"channelConfig"`
	Bitrate       *uint64  `json:"bitrate"`
	InitData      string   `json:"initData"`
	InitRef       string   `json:"initRef"`
	Jitter        *float64 `json:"jitter"`
}

// fromMSF converts an MSF catalog to the hang shape: tracks without a known
// role or packaging are skipped, legacy/loc initData is the description
// (base64 here, unlike hang's hex).
func fromMSF(doc map[string]any) (*catalog.Catalog, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var m struct {
		Tracks       []msfTrack `json:"tracks"`
		InitDataList []struct {
			ID   string `json:"id"`
			Data string `json:"data"`
		} `json:"initDataList"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &catalog.SyntaxError{Err: fmt.Errorf("msf: %w", err)}
	}
	inits := map[string]string{}
	for _, d := range m.InitDataList {
		inits[d.ID] = d.Data
	}
	c := &catalog.Catalog{}
	for _, t := range m.Tracks {
		switch t.Packaging {
		case "legacy", "loc", "cmaf":
		default:
			continue
		}
		init := t.InitData
		if init == "" && t.InitRef != "" {
			init = inits[t.InitRef]
		}
		cm := catalog.Common{Codec: t.Codec, Bitrate: t.Bitrate, Jitter: t.Jitter,
			Container: &catalog.Container{Kind: t.Packaging}}
		if t.Packaging == "cmaf" {
			if init == "" {
				return nil, &catalog.SyntaxError{Err: fmt.Errorf("msf: cmaf track %q without initData", t.Name)}
			}
			cm.Container.Init = init
		} else if init != "" {
			d, err := base64.StdEncoding.DecodeString(init)
			if err != nil {
				return nil, &catalog.SyntaxError{Err: fmt.Errorf("msf: track %q initData: %w", t.Name, err)}
			}
			cm.Description = d
		}
		switch t.Role {
		case "video":
			if c.Video.Renditions == nil {
				c.Video.Renditions = map[string]catalog.VideoConfig{}
			}
			c.Video.Renditions[t.Name] = catalog.VideoConfig{Common: cm, CodedWidth: t.Width, CodedHeight: t.Height, Framerate: t.Framerate}
		case "audio":
			ch, _ := strconv.ParseUint(t.ChannelConfig, 10, 32)
			if t.Samplerate == nil || ch == 0 {
				// The reference derives these from initData; without them
				// the rendition cannot be described.
				continue
			}
			if c.Audio.Renditions == nil {
				c.Audio.Renditions = map[string]catalog.AudioConfig{}
			}
			c.Audio.Renditions[t.Name] = catalog.AudioConfig{Common: cm, SampleRate: *t.Samplerate, NumberOfChannels: uint32(ch)}
		}
	}
	return c, nil
}
