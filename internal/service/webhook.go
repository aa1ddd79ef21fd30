package service

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moq-export/moq-export/record"
)

// The events the service tells webhooks, in the order a recording has
// them: recording.started, then file.opened and file.finished for each
// file, then recording.ended.
const (
	EventRecordingStarted = "recording.started"
	EventFileOpened       = "file.opened"
	EventFileFinished     = "file.finished"
	EventRecordingEnded   = "recording.ended"
)

// The headers of a webhook request: the Unix time it was signed at, and
// "sha256=" and the hex HMAC-SHA256 of "TIMESTAMP.BODY" keyed with the
// webhook secret. A receiver recomputes it and refuses old timestamps
// (replays).
const (
	HeaderTimestamp = "X-Moq-Export-Timestamp"
	HeaderSignature = "X-Moq-Export-Signature"
	HeaderEvent     = "X-Moq-Export-Event"
)

// Event is the JSON body of a webhook.
type Event struct {
	// ID is unique in this process; Sequence counts the events of one
	// recording from 1, so a receiver can order them and spot a gap.
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Time      time.Time   `json:"time"`
	Sequence  int         `json:"sequence"`
	Recording EventRecord `json:"recording"`
	File      *EventFile  `json:"file,omitempty"`
	Tracks    []TrackJSON `json:"tracks,omitempty"`
	Stats     *StatsJSON  `json:"stats,omitempty"`
	Drops     *EventDrops `json:"drops,omitempty"`
}

// EventRecord names the recording of an event.
type EventRecord struct {
	ID        string `json:"id"`
	Broadcast string `json:"broadcast"`
	State     string `json:"state"`
	Result    string `json:"result,omitempty"` // recording.ended: ok, stopped, error
	Error     string `json:"error,omitempty"`
}

// EventFile is the file of file.opened and file.finished.
type EventFile struct {
	Path     string  `json:"path"`
	URL      string  `json:"url,omitempty"`  // the object's URL, for an object store
	Href     string  `json:"href,omitempty"` // under /files/ when it is under the root
	Format   string  `json:"format"`
	Segment  int     `json:"segment"`
	Size     int64   `json:"size"`
	Frames   int64   `json:"frames"`
	Duration float64 `json:"duration_seconds"`
	Error    string  `json:"error,omitempty"`
}

// EventDrops are the frames a recording dropped so far.
type EventDrops struct {
	Late  int64 `json:"late"`
	Muxer int64 `json:"muxer"`
	Gaps  int64 `json:"gaps"`
}

// Sign returns the HeaderSignature value of body sent at timestamp ts.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks the signature of a webhook request (its two headers and
// body) and that it was signed within maxAge of now.
func Verify(secret []byte, ts, sig string, body []byte, maxAge time.Duration, now time.Time) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: bad timestamp %q", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return fmt.Errorf("webhook: timestamp %s is %v away: a replay, or a clock off", ts, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig)) {
		return fmt.Errorf("webhook: signature does not match")
	}
	return nil
}

// dispatcher delivers events: one worker per webhook URL, each with a
// bounded queue delivered in order (so each recording's events arrive in
// order), retried with backoff; and the on-file-finished command.
type dispatcher struct {
	s  *Service
	mu sync.Mutex
	// workers by URL; seq numbers the events, perRec the events of each
	// recording.
	workers map[string]*worker
	seq     int64
	perRec  map[*entry]int
	hook    *worker // the --on-file-finished command, when set
	closing bool
	wg      sync.WaitGroup
}

type worker struct {
	url   string
	queue chan []byte // JSON bodies (or, for the hook, event bodies)
	event chan *Event // the hook's events
	stop  chan struct{}
}

// Backoff of webhook retries: retryBase doubling up to retryMax, for at
// most retryFor.
var (
	retryBase = 250 * time.Millisecond
	retryMax  = 2 * time.Second
	retryFor  = 10 * time.Minute
)

func newDispatcher(s *Service) *dispatcher {
	d := &dispatcher{s: s, workers: map[string]*worker{}, perRec: map[*entry]int{}}
	if s.opts.OnFileFinished != "" {
		d.hook = &worker{event: make(chan *Event, s.opts.WebhookQueue), stop: make(chan struct{})}
		d.wg.Add(1)
		go d.runHook(d.hook)
	}
	return d
}

// send builds the event typ of recording e (and file event fe) and queues
// it for every webhook: never blocks; a full queue drops it, counted.
func (d *dispatcher) send(e *entry, typ string, fe *record.FileEvent) {
	targets := append(append([]string(nil), d.s.opts.Webhooks...), e.webhooks...)
	if len(targets) == 0 && (d.hook == nil || typ != EventFileFinished) {
		return
	}
	ev := d.s.event(e, typ, fe)
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return
	}
	d.seq++
	ev.ID = "evt-" + strconv.FormatInt(d.seq, 10)
	if typ == EventRecordingEnded {
		ev.Sequence = d.perRec[e] + 1
		delete(d.perRec, e)
	} else {
		d.perRec[e]++
		ev.Sequence = d.perRec[e]
	}
	body, err := json.Marshal(ev)
	if err != nil {
		d.mu.Unlock()
		d.s.log.Error("webhook: encoding the event", "err", err)
		return
	}
	for _, url := range targets {
		w := d.workers[url]
		if w == nil {
			w = &worker{url: url, queue: make(chan []byte, d.s.opts.WebhookQueue), stop: make(chan struct{})}
			d.workers[url] = w
			d.wg.Add(1)
			go d.run(w)
		}
		select {
		case w.queue <- body:
			d.s.metrics.webhookQueued.Inc()
		default:
			d.s.metrics.webhookDrop.Inc()
			d.s.log.Warn("webhook queue full: event dropped", "webhook", redactHook(url), "event", typ, "recording", e.id)
		}
	}
	if d.hook != nil && typ == EventFileFinished {
		select {
		case d.hook.event <- ev:
		default:
			d.s.metrics.hookRuns.WithLabelValues("dropped").Inc()
		}
	}
	d.mu.Unlock()
}

// run delivers w's queue in order.
func (d *dispatcher) run(w *worker) {
	defer d.wg.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		select {
		case body := <-w.queue:
			d.deliver(client, w, body)
			d.s.metrics.webhookQueued.Dec()
		case <-w.stop:
			return
		}
	}
}

// deliver posts body to w until it is taken (2xx), retrying with backoff
// for at most retryFor, or until the service is closed.
func (d *dispatcher) deliver(client *http.Client, w *worker, body []byte) {
	wait := retryBase
	start := time.Now()
	for {
		err := d.post(client, w.url, body)
		if err == nil {
			d.s.metrics.webhookSent.WithLabelValues("ok").Inc()
			return
		}
		if time.Since(start) > retryFor {
			d.s.metrics.webhookSent.WithLabelValues("failed").Inc()
			d.s.log.Warn("webhook: giving up on an event", "webhook", redactHook(w.url), "err", err)
			return
		}
		d.s.metrics.webhookSent.WithLabelValues("retry").Inc()
		d.s.log.Debug("webhook: retrying", "webhook", redactHook(w.url), "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-w.stop:
			return
		}
		wait = min(2*wait, retryMax)
	}
}

func (d *dispatcher) post(client *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "moq-export")
	req.Header.Set(HeaderTimestamp, ts)
	var typ struct{ Type string }
	_ = json.Unmarshal(body, &typ)
	req.Header.Set(HeaderEvent, typ.Type)
	if len(d.s.opts.WebhookSecret) > 0 {
		req.Header.Set(HeaderSignature, Sign(d.s.opts.WebhookSecret, ts, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// close stops taking events and delivers those queued until ctx ends.
func (d *dispatcher) close(ctx context.Context) {
	d.mu.Lock()
	d.closing = true
	ws := make([]*worker, 0, len(d.workers)+1)
	for _, w := range d.workers {
		ws = append(ws, w)
	}
	if d.hook != nil {
		ws = append(ws, d.hook)
	}
	d.mu.Unlock()
	for _, w := range ws {
		for ctx.Err() == nil && (len(w.queue) > 0 || len(w.event) > 0) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(w.stop)
	}
	d.wg.Wait()
}

// runHook runs the --on-file-finished command for each event, one at a
// time, with the event in environment variables:
//
//	MOQ_EXPORT_EVENT      file.finished
//	MOQ_EXPORT_PATH       the file
//	MOQ_EXPORT_URL        the object's URL (an object store), else ""
//	MOQ_EXPORT_HREF       its path under /files/ ("" when outside the root)
//	MOQ_EXPORT_BROADCAST  the broadcast
//	MOQ_EXPORT_RECORDING  the recording's ID
//	MOQ_EXPORT_FORMAT     flv, mkv, webm, ts or mp4
//	MOQ_EXPORT_SEGMENT    the file's number in its recording (0, 1, ...)
//	MOQ_EXPORT_SIZE       bytes
//	MOQ_EXPORT_FRAMES     frames
//	MOQ_EXPORT_DURATION   media seconds
//	MOQ_EXPORT_JSON       the webhook body
func (d *dispatcher) runHook(w *worker) {
	defer d.wg.Done()
	for {
		select {
		case ev := <-w.event:
			d.s.runHook(ev)
		case <-w.stop:
			return
		}
	}
}

func (s *Service) runHook(ev *Event) {
	body, _ := json.Marshal(ev)
	f := ev.File
	env := append(os.Environ(),
		"MOQ_EXPORT_EVENT="+ev.Type,
		"MOQ_EXPORT_PATH="+f.Path,
		"MOQ_EXPORT_URL="+f.URL,
		"MOQ_EXPORT_HREF="+f.Href,
		"MOQ_EXPORT_BROADCAST="+ev.Recording.Broadcast,
		"MOQ_EXPORT_RECORDING="+ev.Recording.ID,
		"MOQ_EXPORT_FORMAT="+f.Format,
		"MOQ_EXPORT_SEGMENT="+strconv.Itoa(f.Segment),
		"MOQ_EXPORT_SIZE="+strconv.FormatInt(f.Size, 10),
		"MOQ_EXPORT_FRAMES="+strconv.FormatInt(f.Frames, 10),
		"MOQ_EXPORT_DURATION="+strconv.FormatFloat(f.Duration, 'f', 3, 64),
		"MOQ_EXPORT_JSON="+string(body))
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.opts.OnFileFinished)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.metrics.hookRuns.WithLabelValues("failed").Inc()
		s.log.Warn("on-file-finished command failed", "path", f.Path, "err", err, "output", strings.TrimSpace(string(out)))
		return
	}
	s.metrics.hookRuns.WithLabelValues("ok").Inc()
	s.log.Info("on-file-finished command ran", "path", f.Path)
}

// hookTimeout bounds one run of the on-file-finished command.
const hookTimeout = 5 * time.Minute

// redactHook returns a webhook URL without its query and user info (a
// token may be there), for logs.
func redactHook(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '@'); j >= 0 {
			u = u[:i+3] + u[i+3+j+1:]
		}
	}
	return u
}

// event builds the event typ of recording e.
func (s *Service) event(e *entry, typ string, fe *record.FileEvent) *Event {
	rec := e.rec
	ev := &Event{Type: typ, Time: time.Now().UTC(),
		Recording: EventRecord{ID: e.id, Broadcast: rec.Broadcast(), State: string(rec.State())}}
	if typ == EventRecordingEnded {
		ev.Recording.Result = e.result()
		if err := rec.Err(); err != nil {
			ev.Recording.Error = err.Error()
		}
		st := statsJSON(rec.Stats())
		ev.Stats = &st
	}
	if fe != nil {
		f := fe.File
		ev.File = &EventFile{Path: f.Path, URL: f.URL, Href: s.fileURL(f.Path), Format: f.Format, Segment: f.Segment, Size: f.Size, Frames: f.Frames, Duration: f.Media}
		if fe.Err != nil {
			ev.File.Error = fe.Err.Error()
		}
	}
	if typ == EventFileFinished || typ == EventRecordingEnded {
		var dr EventDrops
		for _, t := range rec.Tracks() {
			ev.Tracks = append(ev.Tracks, trackJSON(t))
			dr.Late += t.DroppedLate
			dr.Muxer += t.DroppedByMuxer
			dr.Gaps += t.Gaps
		}
		ev.Drops = &dr
	}
	return ev
}
