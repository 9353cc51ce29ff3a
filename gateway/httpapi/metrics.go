package httpapi

import (
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the HTTP front's metrics, on the core's registry. Paths are the route
// patterns (unknown paths count as "other"), so the label sets stay bounded.
type metrics struct {
	authFailures *prometheus.CounterVec   // reason
	requests     *prometheus.CounterVec   // path, code
	requestTime  *prometheus.HistogramVec // path
	phaseTime    *prometheus.HistogramVec // phase
	// phases are phaseTime's histograms by gateway.Phase, looked up once: every request
	// observes several.
	phases []prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_auth_failures_total",
			Help: "Refused authentications by reason (missing, malformed, unknown, revoked, rate_limited).",
		}, []string{"reason"}),
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
	m.phaseTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cmdgate_request_phase_seconds",
		Help: "Time requests spent in each phase: auth, decode, parse, policy, audit_decision, sandbox_start, run, audit_outcome, encode.",
		// From tens of microseconds (parse, policy) to minutes (run).
		Buckets: prometheus.ExponentialBuckets(0.00002, 4, 12),
	}, []string{"phase"})
	for _, p := range gateway.Phases() {
		m.phases = append(m.phases, m.phaseTime.WithLabelValues(p.String()))
	}
	reg.MustRegister(m.authFailures, m.requests, m.requestTime, m.phaseTime)
	return m
}
