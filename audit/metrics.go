package audit

import "github.com/prometheus/client_golang/prometheus"

// metrics are the trail's series.
type metrics struct {
	records, dropped, errors, rotations prometheus.Counter
}

func newMetrics() metrics {
	return metrics{
		records:   prometheus.NewCounter(prometheus.CounterOpts{Name: "stelae_audit_records_total", Help: "Lines written to the audit trail."}),
		dropped:   prometheus.NewCounter(prometheus.CounterOpts{Name: "stelae_audit_dropped_total", Help: "Audit entries dropped because the trail's queue was full (each gap has a \"dropped\" line)."}),
		errors:    prometheus.NewCounter(prometheus.CounterOpts{Name: "stelae_audit_errors_total", Help: "Failed writes, fsyncs and rotations of the audit trail."}),
		rotations: prometheus.NewCounter(prometheus.CounterOpts{Name: "stelae_audit_rotations_total", Help: "Rotations of the audit trail's file."}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.records, m.dropped, m.errors, m.rotations}
}
