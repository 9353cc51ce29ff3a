package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus metrics, on a registry of their own (never the
// global one, so that several Servers in one process do not collide). Label values are
// bounded: actions and results are fixed sets, rules are the bundle's rule names, paths
// are the route patterns (unknown paths count as "other").
type metrics struct {
	reg *prometheus.Registry

	decisions     *prometheus.CounterVec   // action, rule
	decisionCache *prometheus.CounterVec   // result
	execDuration  prometheus.Histogram     // seconds
	auditAppend   prometheus.Histogram     // seconds
	auditFailures *prometheus.CounterVec   // kind
	inFlight      prometheus.Gauge         // commands running
	authFailures  *prometheus.CounterVec   // reason
	reloads       *prometheus.CounterVec   // result
	requests      *prometheus.CounterVec   // path, code
	requestTime   *prometheus.HistogramVec // path
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_decisions_total",
			Help: "Policy decisions by action and by rule among their reasons (rule \"\" when a decision has no reason).",
		}, []string{"action", "rule"}),
		decisionCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_decision_cache_total",
			Help: "Decisions answered from the decision cache (hit) or evaluated (miss); none while the cache is off.",
		}, []string{"result"}),
		execDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cmdgate_exec_duration_seconds",
			Help:    "Wall time of executed commands.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
		}),
		auditAppend: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cmdgate_audit_append_seconds",
			Help:    "Latency of durable audit appends.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		auditFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_audit_append_failures_total",
			Help: "Audit appends that failed, by record kind (a failed decision append refuses the request; a failed execution append loses the execution summary).",
		}, []string{"kind"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cmdgate_commands_in_flight",
			Help: "Commands running now.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_auth_failures_total",
			Help: "Refused authentications by reason (missing, malformed, unknown, revoked, rate_limited).",
		}, []string{"reason"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_policy_reloads_total",
			Help: "Policy bundle loads by result (ok, error).",
		}, []string{"result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"path", "code"}),
		requestTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cmdgate_http_request_duration_seconds",
			Help:    "HTTP request handling time by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"path"}),
	}
	m.reg.MustRegister(m.decisions, m.decisionCache, m.execDuration, m.auditAppend, m.auditFailures, m.inFlight,
		m.authFailures, m.reloads, m.requests, m.requestTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
