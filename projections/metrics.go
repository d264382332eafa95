package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, all labelled by projector.
const (
	// MetricLag is the number of log positions between the log's head
	// and the projector's checkpoint, measured when scraped.
	MetricLag = "cgp_projection_lag_positions"
	// MetricCheckpoint is the projector's checkpoint.
	MetricCheckpoint = "cgp_projection_checkpoint_position"
	// MetricDelay is the histogram of seconds from an event's RecordedAt
	// to its projection.
	MetricDelay = "cgp_projection_delay_seconds"
	// MetricProjected counts events applied.
	MetricProjected = "cgp_projection_events_projected_total"
	// MetricParked counts events parked.
	MetricParked = "cgp_projection_events_parked_total"
)

// headTimeout bounds the head-position read of one scrape.
const headTimeout = 2 * time.Second

type metrics struct {
	projected *prometheus.CounterVec
	parked    *prometheus.CounterVec
	delay     *prometheus.HistogramVec
	positions *positionCollector
}

func newMetrics(r *Runtime) *metrics {
	return &metrics{
		projected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricProjected,
			Help: "Events applied to read models, by projector.",
		}, []string{"projector"}),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricParked,
			Help: "Events parked after their retries failed, by projector.",
		}, []string{"projector"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricDelay,
			Help:    "Seconds from an event's recording in the log to its projection, by projector.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms … 262 s
		}, []string{"projector"}),
		positions: &positionCollector{
			r:          r,
			lag:        prometheus.NewDesc(MetricLag, "Log positions between the log's head and the projector's checkpoint.", []string{"projector"}, nil),
			checkpoint: prometheus.NewDesc(MetricCheckpoint, "The projector's checkpoint: the last log position applied or parked.", []string{"projector"}, nil),
		},
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.projected, m.parked, m.delay, m.positions} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register projection metrics: %w", err)
		}
	}
	return nil
}

// positionCollector reports lag and checkpoints when scraped, reading the
// log's head then, so that lag is exact without a polling goroutine.
type positionCollector struct {
	r               *Runtime
	lag, checkpoint *prometheus.Desc
}

func (c *positionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.checkpoint
}

func (c *positionCollector) Collect(ch chan<- prometheus.Metric) {
	cps := c.r.Checkpoints()
	for name, cp := range cps {
		ch <- prometheus.MustNewConstMetric(c.checkpoint, prometheus.GaugeValue, float64(cp), name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), headTimeout)
	defer cancel()
	head, err := c.r.cfg.Log.HeadPosition(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lag, fmt.Errorf("read log head: %w", err))
		return
	}
	for name, cp := range cps {
		lag := 0.0
		if head > cp {
			lag = float64(head - cp)
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, lag, name)
	}
}
