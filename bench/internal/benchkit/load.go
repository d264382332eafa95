package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cgp-platform/cgp/ingest"
)

// EventsPath is the commerce platform's webhook receiver.
const EventsPath = "/webhooks/events"

// Delivery is one commerce webhook delivery, signed ahead of sending.
type Delivery struct {
	ID          string // X-Commerce-Webhook-Id
	Topic       string // X-Commerce-Topic
	TriggeredAt string // X-Commerce-Triggered-At (RFC 3339), "" to leave it out
	Body        []byte
	Signature   string // X-Commerce-Hmac-Sha256
}

// NewDelivery signs body with secret as the platform does.
func NewDelivery(secret, id, topic string, body []byte) Delivery {
	return Delivery{ID: id, Topic: topic, Body: body, Signature: ingest.SignCommerce([]byte(secret), body)}
}

// Request builds the POST of d to url for the shop domain.
func (d Delivery) Request(ctx context.Context, url, shopDomain string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("build delivery request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set(ingest.HeaderHMAC, d.Signature)
	h.Set(ingest.HeaderWebhookID, d.ID)
	h.Set(ingest.HeaderTopic, d.Topic)
	h.Set(ingest.HeaderShopDomain, shopDomain)
	if d.TriggeredAt != "" {
		h.Set(ingest.HeaderTriggeredAt, d.TriggeredAt)
	}
	return req, nil
}

// Client returns an HTTP client keeping up to conns keep-alive connections
// to one host (0: no limit on the connections, 1024 idle kept).
func Client(conns int, timeout time.Duration) *http.Client {
	idle := conns
	if idle <= 0 {
		idle = 1024
	}
	return &http.Client{
		Transport: &http.Transport{MaxIdleConns: idle, MaxIdleConnsPerHost: idle, MaxConnsPerHost: conns, IdleConnTimeout: time.Minute},
		Timeout:   timeout,
	}
}

// Pace calls fn(i, at) for i from 0 to n-1, each at its slot
// at = start + i*interval, or at once when the caller is behind: an open
// loop, whatever fn's callees answer. fn must not block for long.
func Pace(start time.Time, interval time.Duration, n int, fn func(i int, at time.Time)) {
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		fn(i, at)
	}
}

// Durations are latencies.
type Durations []time.Duration

// P returns the q-th percentile (0 to 100; nearest rank, rounding down);
// 0 for no durations.
func (d Durations) P(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append(Durations(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*q/100)]
}

// Max returns the largest duration.
func (d Durations) Max() time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

// Median returns the middle value of v (the upper one of an even count);
// 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// MedianOf returns the median of f over xs.
func MedianOf[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return Median(v)
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Thousands formats n rounded to an integer with comma separators.
func Thousands(n float64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(int64(n+0.5), 10)
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
