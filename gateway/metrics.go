package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the gateway's Prometheus metrics, on a registry of their own (never the
// global one, so that several Servers in one process do not collide). Label values are
// bounded: actions and results are fixed sets, rules are the bundle's rule names. A front
// registers its own metrics on the same registry (Server.Registry).
type metrics struct {
	reg *prometheus.Registry

	decisions     *prometheus.CounterVec // action, rule
	decisionCache *prometheus.CounterVec // result
	execDuration  prometheus.Histogram   // seconds
	auditAppend   prometheus.Histogram   // seconds
	auditFailures *prometheus.CounterVec // kind
	inFlight      prometheus.Gauge       // commands running
	reloads       *prometheus.CounterVec // result
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
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmdgate_policy_reloads_total",
			Help: "Policy bundle loads by result (ok, error).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.decisions, m.decisionCache, m.execDuration, m.auditAppend, m.auditFailures, m.inFlight,
		m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
