package service

import (
	"github.com/moq-export/moq-export/record"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus metrics, all named moq_export_*.
// The counters of the recordings themselves (frames, bytes, drops) are
// read from the Recorders at scrape time (recorderCollector), so they
// agree with the command's summary by construction.
type metrics struct {
	reg *prometheus.Registry

	started       prometheus.Counter
	ended         *prometheus.CounterVec
	files         prometheus.Counter
	sessions      *prometheus.CounterVec
	refused       *prometheus.CounterVec
	webhookSent   *prometheus.CounterVec
	webhookDrop   prometheus.Counter
	hookRuns      *prometheus.CounterVec
	retDeleted    *prometheus.CounterVec
	retBytes      prometheus.Counter
	apiRequests   *prometheus.CounterVec
	webhookQueued prometheus.Gauge
}

func newMetrics(s *Service) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.started = prometheus.NewCounter(prometheus.CounterOpts{Name: "moq_export_recordings_started_total",
		Help: "Recordings started (one per broadcast recorded)."})
	m.ended = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_recordings_ended_total",
		Help: "Recordings ended, by result: ok (the broadcast or --duration ended it), stopped (through the API), error."}, []string{"result"})
	m.files = prometheus.NewCounter(prometheus.CounterOpts{Name: "moq_export_files_finished_total", Help: "Files finished."})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_sessions_total",
		Help: "MoQ sessions established (dialled or accepted), by protocol version."}, []string{"version"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_publishers_refused_total",
		Help: "Publishers or broadcasts refused, by reason."}, []string{"reason"})
	m.webhookSent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by result: ok, retry (failed, tried again), failed (given up)."}, []string{"result"})
	m.webhookDrop = prometheus.NewCounter(prometheus.CounterOpts{Name: "moq_export_webhook_dropped_total",
		Help: "Webhook events dropped because a receiver's queue was full."})
	m.webhookQueued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "moq_export_webhook_queued",
		Help: "Webhook events waiting to be delivered."})
	m.hookRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_on_file_finished_runs_total",
		Help: "Runs of the --on-file-finished command, by result: ok, failed."}, []string{"result"})
	m.retDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_retention_deleted_files_total",
		Help: "Finished files deleted by retention, by reason: age, size."}, []string{"reason"})
	m.retBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "moq_export_retention_deleted_bytes_total",
		Help: "Bytes of the files deleted by retention."})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moq_export_api_requests_total",
		Help: "Control API requests, by operation and status code."}, []string{"op", "code"})
	for _, c := range []prometheus.Collector{m.started, m.ended, m.files, m.sessions, m.refused, m.webhookSent, m.webhookDrop,
		m.webhookQueued, m.hookRuns, m.retDeleted, m.retBytes, m.apiRequests} {
		f(c)
	}
	f(&recorderCollector{s: s})
	if s.opts.Load != nil {
		f(loadCollector{s.opts.Load})
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"ok", "stopped", "error"} {
		m.ended.WithLabelValues(r)
	}
	return m
}

// SessionOpened counts a MoQ session of protocol version (dialled, or
// accepted from a publisher).
func (s *Service) SessionOpened(version string) { s.metrics.sessions.WithLabelValues(version).Inc() }

// Refused counts a publisher or broadcast refused for reason (a short
// word: limit, auth, version, ...).
func (s *Service) Refused(reason string) { s.metrics.refused.WithLabelValues(reason).Inc() }

var (
	descActive   = prometheus.NewDesc("moq_export_recordings_active", "Recordings running now (starting, waiting for their catalog, or writing).", nil, nil)
	descFrames   = prometheus.NewDesc("moq_export_frames_written_total", "Frames written to the outputs.", nil, nil)
	descBytes    = prometheus.NewDesc("moq_export_bytes_written_total", "Media payload bytes written to the outputs.", nil, nil)
	descLate     = prometheus.NewDesc("moq_export_frames_late_total", "Frames that arrived after the jitter delay (dropped or passed).", nil, nil)
	descDropped  = prometheus.NewDesc("moq_export_frames_dropped_total", "Frames not written, by reason: late (past the jitter delay), muxer (the container refused them), no_keyframe (no keyframe led to them: a group that opens with a delta frame, read first or after a gap).", []string{"reason"}, nil)
	descGaps     = prometheus.NewDesc("moq_export_gaps_total", "Gaps in the tracks (groups lost to outages or skipped).", nil, nil)
	descLost     = prometheus.NewDesc("moq_export_lost_media_seconds_total", "Media time the tracks' gaps skipped, summed.", nil, nil)
	descReconn   = prometheus.NewDesc("moq_export_reconnects_total", "Reconnects to the relay.", nil, nil)
	descRestart  = prometheus.NewDesc("moq_export_recordings_restarted_total", "Recordings a full disk ended that --record-all started again, into new files.", nil, nil)
	descUpBytes  = prometheus.NewDesc("moq_export_upload_bytes_total", "Bytes an object store took (parts and objects).", nil, nil)
	descUpParts  = prometheus.NewDesc("moq_export_upload_parts_total", "Parts (and single-request objects) an object store took.", nil, nil)
	descUpObjs   = prometheus.NewDesc("moq_export_upload_objects_total", "Objects finished in an object store.", nil, nil)
	descUpRetry  = prometheus.NewDesc("moq_export_upload_retries_total", "Object store requests tried again after a transient failure.", nil, nil)
	descUpFail   = prometheus.NewDesc("moq_export_upload_failures_total", "Objects that could not be finished (kept in the spool).", nil, nil)
	descUpCuts   = prometheus.NewDesc("moq_export_upload_cuts_total", "Recordings cut because too much waited in the spool for the store.", nil, nil)
	descUpLat    = prometheus.NewDesc("moq_export_upload_latency_seconds", "How long the last part took to upload.", nil, nil)
	descSpool    = prometheus.NewDesc("moq_export_spool_bytes", "Bytes in the local spool, not yet in the object store.", nil, nil)
	descBehind   = prometheus.NewDesc("moq_export_behind_seconds", "How far the most lagging running recording's written position trails live: the newest frame time received on a track less the newest written of it (a kill would lose that on top of the last second; after an outage, while the gap is filled, up to the outage).", nil, nil)
	descBehindN  = prometheus.NewDesc("moq_export_recordings_behind", "Running recordings whose written position trails live by more than 2 s (each logged as it falls behind and as it catches up).", nil, nil)
	descDiskFree = prometheus.NewDesc("moq_export_disk_free_bytes", "Free bytes on the file system of the output root.", []string{"root"}, nil)
)

// recorderCollector reads the counters of the Recorders at scrape time.
type recorderCollector struct{ s *Service }

func (c *recorderCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descActive, descFrames, descBytes, descLate, descDropped, descGaps, descLost, descReconn, descRestart, descBehind, descBehindN, descDiskFree,
		descUpBytes, descUpParts, descUpObjs, descUpRetry, descUpFail, descUpCuts, descUpLat, descSpool} {
		ch <- d
	}
}

func (c *recorderCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	recs := append([]*record.Recorder(nil), s.recorders...)
	active := len(s.byRec)
	s.mu.Unlock()
	var st record.Stats
	var up record.UploadStats
	uploads := false
	var late, muxer, noKey, gaps int64
	var lost float64
	for _, r := range recs {
		rs := r.Stats()
		st.Frames += rs.Frames
		st.Bytes += rs.Bytes
		st.Late += rs.Late
		st.Restarted += rs.Restarted
		st.Behind = max(st.Behind, rs.Behind)
		st.RecordingsBehind += rs.RecordingsBehind
		if _, ok := r.Options().Output.(record.Uploader); ok {
			uploads = true
			u := rs.Upload
			up.BytesUploaded += u.BytesUploaded
			up.Parts += u.Parts
			up.Objects += u.Objects
			up.Retries += u.Retries
			up.Failures += u.Failures
			up.Cuts += u.Cuts
			up.SpoolBytes += u.SpoolBytes
			up.Latency = max(up.Latency, u.Latency)
		}
		for _, t := range r.Tracks() {
			late += t.DroppedLate
			muxer += t.DroppedByMuxer
			noKey += t.DroppedNoKeyframe
			gaps += t.Gaps
			lost += t.Lost
		}
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(active))
	counter(descFrames, float64(st.Frames))
	counter(descBytes, float64(st.Bytes))
	counter(descLate, float64(st.Late))
	counter(descDropped, float64(late), "late")
	counter(descDropped, float64(muxer), "muxer")
	counter(descDropped, float64(noKey), "no_keyframe")
	counter(descGaps, float64(gaps))
	counter(descLost, lost)
	counter(descRestart, float64(st.Restarted))
	ch <- prometheus.MustNewConstMetric(descBehind, prometheus.GaugeValue, st.Behind.Seconds())
	ch <- prometheus.MustNewConstMetric(descBehindN, prometheus.GaugeValue, float64(st.RecordingsBehind))
	if uploads {
		counter(descUpBytes, float64(up.BytesUploaded))
		counter(descUpParts, float64(up.Parts))
		counter(descUpObjs, float64(up.Objects))
		counter(descUpRetry, float64(up.Retries))
		counter(descUpFail, float64(up.Failures))
		counter(descUpCuts, float64(up.Cuts))
		ch <- prometheus.MustNewConstMetric(descUpLat, prometheus.GaugeValue, up.Latency.Seconds())
		ch <- prometheus.MustNewConstMetric(descSpool, prometheus.GaugeValue, float64(up.SpoolBytes))
	}
	if s.opts.Reconnects != nil {
		counter(descReconn, float64(s.opts.Reconnects()))
	}
	if free, err := record.FreeSpace(s.opts.Root); err == nil {
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(free), s.opts.Root)
	}
}
