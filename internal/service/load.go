package service

import (
	"net/http"

	"github.com/moq-export/moq-export/internal/overload"
	"github.com/prometheus/client_golang/prometheus"
)

// Overload made visible: the gauges of the command's overload monitor
// (Options.Load) and the API's refusal of new recordings while it says the
// recorder is behind (Options.Base.Admit).

var (
	descOverloaded = prometheus.NewDesc("moq_export_overloaded",
		"1 while the recorder is overloaded: a connection's goroutine could find half of quic-go's packet queue filled while it waits to run; new recordings are refused then.", nil, nil)
	descOverloads = prometheus.NewDesc("moq_export_overload_episodes_total", "Times the recorder became overloaded.", nil, nil)
	descSchedWait = prometheus.NewDesc("moq_export_scheduling_wait_seconds",
		"The longest a runnable goroutine waited to run in the last quarter second.", nil, nil)
	descPktRate = prometheus.NewDesc("moq_export_received_packets_per_second", "Packets the busiest QUIC socket received per second, over the last quarter second.", nil, nil)
	descBacklog = prometheus.NewDesc("moq_export_receive_backlog_packets",
		"Packets that could queue for a connection while its goroutine waits (rate x wait); quic-go drops beyond 256.", nil, nil)
)

// loadCollector reads Options.Load at scrape time.
type loadCollector struct{ load func() overload.State }

func (c loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOverloaded, descOverloads, descSchedWait, descPktRate, descBacklog} {
		ch <- d
	}
}

func (c loadCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.load()
	over := 0.0
	if st.Overloaded {
		over = 1
	}
	ch <- prometheus.MustNewConstMetric(descOverloaded, prometheus.GaugeValue, over)
	ch <- prometheus.MustNewConstMetric(descOverloads, prometheus.CounterValue, float64(st.Episodes))
	ch <- prometheus.MustNewConstMetric(descSchedWait, prometheus.GaugeValue, st.Last.Wait.Seconds())
	ch <- prometheus.MustNewConstMetric(descPktRate, prometheus.GaugeValue, st.Last.Rate)
	ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, st.Last.Backlog())
}

// admit refuses a new recording while Base.Admit says no: 503 with a
// Retry-After, counted as refused for "overload".
func (s *Service) admit(w http.ResponseWriter) error {
	if s.opts.Base.Admit == nil {
		return nil
	}
	if err := s.opts.Base.Admit(); err != nil {
		s.Refused("overload")
		w.Header().Set("Retry-After", "5")
		return &requestError{code: http.StatusServiceUnavailable, msg: err.Error() + "; try again later or on another recorder"}
	}
	return nil
}
