package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"net"
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
	return &http.Client{Transport: transport(conns), Timeout: timeout}
}

// DialTimeout bounds how long a ClientFrom client takes to connect.
const DialTimeout = 5 * time.Second

// ClientFrom is Client with its connections leaving from the local IP
// address local (on Linux, any of 127.0.0.0/8 binds with no set-up), so
// that the server sees each such client as its own peer.
func ClientFrom(local string, conns int, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: DialTimeout}
	tr := transport(conns)
	tr.DialContext = d.DialContext
	return &http.Client{Transport: tr, Timeout: timeout}
}

func transport(conns int) *http.Transport {
	idle := conns
	if idle <= 0 {
		idle = 1024
	}
	return &http.Transport{MaxIdleConns: idle, MaxIdleConnsPerHost: idle, MaxConnsPerHost: conns, IdleConnTimeout: time.Minute}
}

// Pace calls fn(i, at) for i from 0 to n-1, each at its slot
// at = start + i*interval, or at once when the caller is behind: an open
// loop, whatever fn's callees answer. fn must not block for long.
func Pace(start time.Time, interval time.Duration, n int, fn func(i int, at time.Time)) {
	if n <= 0 {
		return
	}
	PaceUntil(context.Background(), start, interval, func(i int, at time.Time) bool {
		fn(i, at)
		return i+1 < n
	})
}

// PaceUntil calls fn(i, at) for i = 0, 1, …, each at its slot
// at = start + i*interval (at once when behind), until ctx ends or fn
// returns false. A slot due after ctx ends is not called. A slow fn
// delays the slots after it, which then come at once.
func PaceUntil(ctx context.Context, start time.Time, interval time.Duration, fn func(i int, at time.Time) bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop() // armed at each slot ahead
	defer timer.Stop()
	deadline, hasDeadline := ctx.Deadline()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if hasDeadline && !at.Before(deadline) {
			return // due when ctx ends, whether or not its timer has run yet
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil || !fn(i, at) {
			return
		}
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
