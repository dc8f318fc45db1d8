// Package metrics is wraptool's Prometheus surface: what an operator of a
// credential gate watches — calls by tool and decision and their duration,
// reloads and the last good one, pending capability requests, active
// grants, connected sessions, the upstream servers' state and the audit
// writer's waits — served at /metrics on the admin listener, behind the
// admin token.
//
// Counters are pushed by the parts that see the events (a call, a reload);
// gauges of state that already lives elsewhere (sessions, grants, pending
// requests, upstreams) are read from a Source at scrape time, so nothing is
// kept twice and nothing can drift.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source answers the gauges at scrape time. Each method must be cheap and
// safe to call from the scraping goroutine; a nil Source reports none.
type Source interface {
	// PendingRequests is the number of capability requests awaiting a
	// decision (-1 when the request log cannot be read).
	PendingRequests() int
	// ActiveGrants is the number of temporary grants in force.
	ActiveGrants() int
	// Sessions is the number of connected MCP sessions.
	Sessions() int
	// Upstreams maps each mcp_servers entry to its state ("running",
	// "starting", "backoff", …).
	Upstreams() map[string]string
	// AuditWaits is how many calls have waited for room in the audit
	// writer's queue (0 without an audit log).
	AuditWaits() uint64
	// AuditLost is how many audit lines could not be written (the disk
	// failed them after every retry).
	AuditLost() uint64
	// Confinement names what confines the processes wraptool starts:
	// "landlock (ABI 7)", or "off".
	Confinement() string
}

// Metrics holds wraptool's collectors in a registry of its own (never the
// global one: two servers in one test process must not share counts).
type Metrics struct {
	reg        *prometheus.Registry
	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	reloads    *prometheus.CounterVec
	lastReload prometheus.Gauge
}

// New registers wraptool's collectors, the Go runtime's and the process's,
// reading src's gauges at every scrape.
func New(src Source) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wraptool_calls_total",
			Help: "Tool calls by MCP tool and decision (allowed, denied, error).",
		}, []string{"tool", "decision"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wraptool_call_duration_seconds",
			Help:    "Duration of tool calls, from the call's arrival to its answer, by MCP tool.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"tool"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wraptool_reloads_total",
			Help: "Config loads after start-up by outcome (ok, rejected).",
		}, []string{"outcome"}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wraptool_last_reload_success_timestamp_seconds",
			Help: "When the config in service was loaded (Unix time).",
		}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.reloads, m.lastReload,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src != nil {
		m.reg.MustRegister(&state{src: src})
	}
	// Both outcomes exist from the start, so a dashboard's rate() has a
	// series to work on before the first failure.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("rejected")
	return m
}

// Call counts one tool call and its duration.
func (m *Metrics) Call(tool, decision string, d time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, decision).Inc()
	m.duration.WithLabelValues(tool).Observe(d.Seconds())
}

// Loaded records the config now in service: at start-up (not counted as a
// reload) and after every successful reload.
func (m *Metrics) Loaded(at time.Time, reload bool) {
	if m == nil {
		return
	}
	if reload {
		m.reloads.WithLabelValues("ok").Inc()
	}
	m.lastReload.Set(float64(at.UnixNano()) / 1e9)
}

// Rejected counts a reload whose config was refused (the one in service
// stays).
func (m *Metrics) Rejected() {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues("rejected").Inc()
}

// Handler serves the registry in the Prometheus text format. It does no
// authentication: the admin listener's guard does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// state turns a Source into gauges at scrape time.
type state struct{ src Source }

var (
	pendingDesc  = prometheus.NewDesc("wraptool_pending_requests", "Capability requests awaiting the operator's decision.", nil, nil)
	grantsDesc   = prometheus.NewDesc("wraptool_active_grants", "Temporary grants in force.", nil, nil)
	sessionsDesc = prometheus.NewDesc("wraptool_sessions", "Connected MCP sessions.", nil, nil)
	upstreamDesc = prometheus.NewDesc("wraptool_upstream_up", "1 when the upstream MCP server is running and initialized, by server and state.", []string{"server", "state"}, nil)
	auditDesc    = prometheus.NewDesc("wraptool_audit_queue_waits_total", "Calls that waited for room in the audit writer's queue (a full queue delays, never drops).", nil, nil)
	confineDesc  = prometheus.NewDesc("wraptool_confinement", "1, labelled with what confines the processes wraptool starts (\"landlock (ABI 7)\", or \"off\").", []string{"mode"}, nil)
	lostDesc     = prometheus.NewDesc("wraptool_audit_lines_lost_total", "Audit lines that could not be written after every retry.", nil, nil)
)

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pendingDesc, grantsDesc, sessionsDesc, upstreamDesc, auditDesc, lostDesc, confineDesc} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	if n := s.src.PendingRequests(); n >= 0 {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
	}
	ch <- prometheus.MustNewConstMetric(grantsDesc, prometheus.GaugeValue, float64(s.src.ActiveGrants()))
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(s.src.Sessions()))
	for name, st := range s.src.Upstreams() {
		up := 0.0
		if st == "running" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upstreamDesc, prometheus.GaugeValue, up, name, st)
	}
	ch <- prometheus.MustNewConstMetric(auditDesc, prometheus.CounterValue, float64(s.src.AuditWaits()))
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(s.src.AuditLost()))
	ch <- prometheus.MustNewConstMetric(confineDesc, prometheus.GaugeValue, 1, s.src.Confinement())
}
