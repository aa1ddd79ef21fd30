package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// RecordingJSON is a recording as the API shows it.
type RecordingJSON struct {
	ID        string      `json:"id"`
	Broadcast string      `json:"broadcast"`
	State     string      `json:"state"`
	Result    string      `json:"result,omitempty"`
	Error     string      `json:"error,omitempty"`
	Started   time.Time   `json:"started"`
	Ended     *time.Time  `json:"ended,omitempty"`
	API       bool        `json:"api"` // started through the API
	Stats     StatsJSON   `json:"stats"`
	Files     []FileJSON  `json:"files"`
	Tracks    []TrackJSON `json:"tracks"`
}

// StatsJSON are a recording's counters.
type StatsJSON struct {
	Media   float64 `json:"media_seconds"`
	Frames  int64   `json:"frames"`
	Bytes   int64   `json:"bytes"`
	Late    int64   `json:"late"`
	Dropped int64   `json:"dropped"`
	Lost    float64 `json:"lost_seconds"`
	Tracks  int     `json:"tracks"`
	// Behind is how far the written position trails live (record.Stats.Behind).
	Behind float64 `json:"behind_seconds"`
}

// FileJSON is one file of a recording.
type FileJSON struct {
	record.FileInfo
	// Href is where /files/ serves it once finished (under the root).
	Href     string `json:"href,omitempty"`
	Finished bool   `json:"finished"`
}

// TrackJSON accounts for one track of a recording.
type TrackJSON struct {
	Track          string  `json:"track"`
	Kind           string  `json:"kind"`
	Received       int64   `json:"received"`
	Written        int64   `json:"written"`
	DroppedLate    int64   `json:"dropped_late"`
	DroppedByMuxer int64   `json:"dropped_by_muxer"`
	Gaps           int64   `json:"gaps"`
	Lost           float64 `json:"lost_seconds"`
}

func statsJSON(s record.Stats) StatsJSON {
	return StatsJSON{Media: s.Media.Seconds(), Frames: s.Frames, Bytes: s.Bytes, Late: s.Late, Dropped: s.Dropped, Lost: s.Lost.Seconds(), Tracks: s.Tracks, Behind: s.Behind.Seconds()}
}

func trackJSON(t record.TrackInfo) TrackJSON {
	return TrackJSON{Track: t.Track, Kind: t.Kind, Received: t.Received, Written: t.Written, DroppedLate: t.DroppedLate,
		DroppedByMuxer: t.DroppedByMuxer, Gaps: t.Gaps, Lost: t.Lost}
}

func (s *Service) recordingJSON(e *entry) RecordingJSON {
	rec := e.rec
	out := RecordingJSON{ID: e.id, Broadcast: rec.Broadcast(), State: string(rec.State()), Started: rec.Started().UTC(), API: e.api,
		Stats: statsJSON(rec.Stats()), Files: []FileJSON{}, Tracks: []TrackJSON{}}
	if rec.State() == record.StateEnded {
		out.Result = e.result()
		end := rec.Ended().UTC()
		out.Ended = &end
		if err := rec.Err(); err != nil {
			out.Error = err.Error()
		}
	}
	files := rec.Files()
	for i, f := range files {
		done := rec.State() == record.StateEnded || i < len(files)-1 || !s.isWriting(abs(f.Path))
		fj := FileJSON{FileInfo: f, Finished: done}
		if done {
			fj.Href = s.fileURL(f.Path)
		}
		out.Files = append(out.Files, fj)
	}
	for _, t := range rec.Tracks() {
		out.Tracks = append(out.Tracks, trackJSON(t))
	}
	return out
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// fileURL is the URL path /files/ serves path at, "" when it is not under
// the root.
func (s *Service) fileURL(path string) string {
	rel, err := filepath.Rel(s.opts.Root, abs(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/files/" + strings.Join(parts, "/")
}

// StartRequest is the body of POST /api/v1/recordings.
type StartRequest struct {
	// URL is the relay (https://, http://, moql://, moqt://) to record
	// from, with its token in the query when it needs one.
	URL string `json:"url,omitempty"`
	// Listen records from the publishers connected to the command's
	// --listen instead of a relay (URL empty): the broadcast is the path
	// a publisher announced.
	Listen bool `json:"listen,omitempty"`
	// Wait, with Listen, is how long to wait for a publisher to announce
	// the broadcast ("30s"; default 15s, at most 5m); after it the start
	// is answered 404.
	Wait string `json:"wait,omitempty"`
	// TLSFingerprint pins the relay's certificate (hex SHA-256), for a
	// relay with a self-signed one.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
	// Broadcast is the broadcast to record, relative to the URL's path.
	Broadcast string `json:"broadcast"`
	// Output is the output template, relative to the service's root (it
	// must stay inside it): {broadcast}, {n} and {time} as with -o.
	Output string `json:"output"`
	// Format is flv, mkv, webm, ts or mp4 (default: from Output).
	Format string `json:"format,omitempty"`
	// Duration and Segment as --duration and --segment ("10m").
	Duration string `json:"duration,omitempty"`
	Segment  string `json:"segment,omitempty"`
	// Video and Audio select renditions as --video and --audio.
	Video []string `json:"video,omitempty"`
	Audio []string `json:"audio,omitempty"`
	// Webhooks receive this recording's events (besides --webhook).
	Webhooks []string `json:"webhooks,omitempty"`
}

// apiError is a JSON error answer.
type apiError struct {
	Error string `json:"error"`
}

// errBadRequest marks a request the client must change.
type requestError struct {
	code int
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func (s *Service) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Service) writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var re *requestError
	if errors.As(err, &re) {
		code = re.code
	}
	s.writeJSON(w, code, apiError{Error: err.Error()})
}

// maxRequestBody bounds an API request body.
const maxRequestBody = 64 << 10

func (s *Service) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/recordings", s.counted("list", s.handleList))
	mux.HandleFunc("POST /api/v1/recordings", s.counted("start", s.handleStart))
	mux.HandleFunc("GET /api/v1/recordings/{id}", s.counted("get", s.handleGet))
	mux.HandleFunc("DELETE /api/v1/recordings/{id}", s.counted("stop", s.handleStop))
	mux.HandleFunc("POST /api/v1/recordings/{id}/split", s.counted("split", s.handleSplit))
	mux.HandleFunc("POST /api/v1/recordings/{id}/chapters", s.counted("chapter", s.handleChapter))
}

// counted counts the requests of op by status code.
func (s *Service) counted(op string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		if err := h(sw, r); err != nil {
			s.writeError(sw, err)
		}
		s.metrics.apiRequests.WithLabelValues(op, fmt.Sprint(sw.code)).Inc()
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) error {
	out := struct {
		Recordings []RecordingJSON `json:"recordings"`
	}{Recordings: []RecordingJSON{}}
	for _, e := range s.entries() {
		out.Recordings = append(out.Recordings, s.recordingJSON(e))
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) entryOf(r *http.Request) (*entry, error) {
	e := s.lookup(r.PathValue("id"))
	if e == nil {
		return nil, &requestError{code: http.StatusNotFound, msg: fmt.Sprintf("no recording %q", r.PathValue("id"))}
	}
	return e, nil
}

func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.recordingJSON(e))
	return nil
}

// stopWait bounds how long DELETE waits for the recording's files to be
// finished before it answers 202 instead of 200.
const stopWait = 30 * time.Second

func (s *Service) handleStop(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r)
	if err != nil {
		return err
	}
	if e.rec.State() != record.StateEnded {
		s.mu.Lock()
		e.stopped = true
		s.mu.Unlock()
		e.rec.Stop()
	}
	select {
	case <-e.rec.Done():
		s.writeJSON(w, http.StatusOK, s.recordingJSON(e))
	case <-time.After(stopWait):
		s.writeJSON(w, http.StatusAccepted, s.recordingJSON(e))
	case <-r.Context().Done():
	}
	return nil
}

func (s *Service) handleSplit(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r)
	if err != nil {
		return err
	}
	if err := e.rec.Split(); err != nil {
		return &requestError{code: http.StatusConflict, msg: err.Error()}
	}
	s.writeJSON(w, http.StatusAccepted, s.recordingJSON(e))
	return nil
}

// ChapterRequest is the body of POST /api/v1/recordings/{id}/chapters.
type ChapterRequest struct {
	Name string `json:"name"`
}

func (s *Service) handleChapter(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r)
	if err != nil {
		return err
	}
	var req ChapterRequest
	if err := decodeStrict(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 200 {
		return badRequest("a chapter needs a name of 1 to 200 bytes")
	}
	if err := e.rec.Chapter(req.Name); err != nil {
		var ce *record.ChapterError
		if errors.As(err, &ce) {
			return &requestError{code: http.StatusUnprocessableEntity, msg: err.Error()}
		}
		return &requestError{code: http.StatusConflict, msg: err.Error()}
	}
	s.writeJSON(w, http.StatusAccepted, s.recordingJSON(e))
	return nil
}

// decodeStrict reads one JSON object of the request into v, refusing
// unknown fields and trailing data.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the body is not the JSON this operation takes: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON object")
	}
	return nil
}

// dialTimeout bounds the connection an API start makes.
const dialTimeout = 15 * time.Second

func (s *Service) handleStart(w http.ResponseWriter, r *http.Request) error {
	var req StartRequest
	if err := decodeStrict(r, &req); err != nil {
		return err
	}
	opts, err := s.startOptions(req)
	if err != nil {
		return err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return &requestError{code: http.StatusServiceUnavailable, msg: "the service is shutting down"}
	}
	if err := s.admit(w); err != nil {
		return err
	}
	wait := dialTimeout
	if req.Wait != "" {
		if wait, err = time.ParseDuration(req.Wait); err != nil || wait <= 0 || wait > 5*time.Minute || !req.Listen {
			return badRequest("wait %q: with listen, give a duration such as 30s (at most 5m)", req.Wait)
		}
	}
	dctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	var (
		src     record.Source
		release = func() {}
		from    string
	)
	if req.Listen {
		if src, err = s.listenSource(dctx, req.Broadcast, wait); err != nil {
			return err
		}
		from = "the publisher on --listen"
	} else {
		// Dial before anything is created: a relay that cannot be reached
		// leaves no file behind.
		sess, err := subscribe.Dial(dctx, req.URL, subscribe.Options{TLSFingerprint: req.TLSFingerprint, Logger: s.log, ReleaseRead: true,
			Reconnect: subscribe.Backoff{GiveUp: 5 * time.Minute}})
		if err != nil {
			return &requestError{code: http.StatusBadGateway, msg: fmt.Sprintf("connecting to %s: %v", subscribe.RedactURL(req.URL), err)}
		}
		s.SessionOpened(sess.Version())
		src, release, from = record.SessionSource(sess), func() { sess.Close() }, subscribe.RedactURL(req.URL)
	}
	rec, err := record.New(opts)
	if err != nil {
		release()
		return badRequest("%v", err)
	}
	s.Watch(rec)
	// The recording outlives the request: its context is the service's.
	started := rec.Start(context.Background(), src, req.Broadcast)
	s.mu.Lock()
	e := s.byRec[started]
	if e == nil { // ended already (refused at once)
		for _, x := range s.ended {
			if x.rec == started {
				e = x
			}
		}
	}
	e.api = true
	s.mu.Unlock()
	go func() {
		<-started.Done()
		release()
	}()
	s.log.Info("recording started through the API", "id", e.id, "broadcast", req.Broadcast, "from", from)
	w.Header().Set("Location", "/api/v1/recordings/"+e.id)
	s.writeJSON(w, http.StatusCreated, s.recordingJSON(e))
	return nil
}

// startOptions checks a start request and returns the record options of
// its recording: every mistake is a 400 before anything is created.
func (s *Service) startOptions(req StartRequest) (record.Options, error) {
	switch {
	case req.Listen && (req.URL != "" || req.TLSFingerprint != ""):
		return record.Options{}, badRequest("listen records from --listen's publishers: give no url or tls_fingerprint with it")
	case req.Listen:
	default:
		if err := checkURL(req.URL); err != nil {
			return record.Options{}, err
		}
	}
	if strings.TrimSpace(req.Broadcast) == "" {
		return record.Options{}, badRequest("broadcast is empty: name the broadcast to record")
	}
	if req.Output == "" {
		return record.Options{}, badRequest("output is empty: give a template under the root, e.g. \"{broadcast}-{n}.mkv\"")
	}
	if filepath.IsAbs(req.Output) {
		return record.Options{}, badRequest("output %q is absolute: give a path relative to the service's root", req.Output)
	}
	path := filepath.Join(s.opts.Root, req.Output)
	if !within(s.opts.Root, path) {
		return record.Options{}, badRequest("output %q leaves the service's root", req.Output)
	}
	t, err := record.ParseTemplate(path)
	if err != nil {
		return record.Options{}, badRequest("output: %v", err)
	}
	if !within(s.opts.Root, t.Dir()) {
		return record.Options{}, badRequest("output %q leaves the service's root", req.Output)
	}
	opts := s.opts.Base
	opts.URL, opts.Session, opts.Broadcast, opts.RecordAll = "", nil, "", false
	opts.OnRecording, opts.OnFile, opts.OnRefused, opts.Progress = nil, nil, nil, nil
	if req.Format != "" {
		if opts.Format, err = record.ParseFormat(req.Format); err != nil {
			return record.Options{}, badRequest("format: %v", err)
		}
	} else if f, ok := record.FormatFromPath(path); ok {
		opts.Format = f
	} else {
		return record.Options{}, badRequest("format: give one, or end output in .flv, .mkv, .webm, .ts or .mp4")
	}
	for _, d := range []struct {
		name string
		v    string
		to   *time.Duration
	}{{"duration", req.Duration, &opts.Duration}, {"segment", req.Segment, &opts.Segment}} {
		*d.to = 0
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v < 0 {
			return record.Options{}, badRequest("%s %q: give a duration such as 90s or 10m", d.name, d.v)
		}
		*d.to = v
	}
	opts.Video, opts.Audio = req.Video, req.Audio
	for _, h := range req.Webhooks {
		u, err := url.Parse(h)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return record.Options{}, badRequest("webhook %q: give an http:// or https:// URL", redactHook(h))
		}
	}
	out, err := record.Files(path, record.FileOptions{})
	if err != nil {
		return record.Options{}, badRequest("output: %v", err)
	}
	if opts.Segment > 0 && !t.Has("n") && !t.Has("time") {
		return record.Options{}, badRequest("segment writes several files: put {n} or {time} in output")
	}
	opts.Output = out
	s.hooksFor(&opts, req.Webhooks)
	return opts, nil
}

// within reports whether path is root or under it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// checkURL accepts the relay URLs subscribe dials.
func checkURL(raw string) error {
	if raw == "" {
		return badRequest("url is empty: give the relay's URL (https://, http://, moql:// or moqt://), or \"listen\": true to record a publisher of --listen")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return badRequest("url %s does not parse", subscribe.RedactURL(raw))
	}
	switch u.Scheme {
	case "https", "http", "moql", "moqt":
	default:
		return badRequest("url scheme %q: use https://, http://, moql:// or moqt://", u.Scheme)
	}
	if u.Host == "" {
		return badRequest("url %s has no host", subscribe.RedactURL(raw))
	}
	return nil
}
