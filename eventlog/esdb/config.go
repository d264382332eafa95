package esdb

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by Config.setDefaults.
const (
	DefaultResubscribeMin    = 100 * time.Millisecond
	DefaultResubscribeMax    = 10 * time.Second
	DefaultIdempotencyWindow = 16
	// maxIdempotencyWindow bounds the tail read done before every append.
	maxIdempotencyWindow = 4096
)

// Config configures the EventStoreDB adapter.
type Config struct {
	// URL is the EventStoreDB connection string, e.g.
	// "esdb://127.0.0.1:2113?tls=false" or
	// "esdb+discover://user:pass@cluster.example:2113". It may carry
	// credentials: the adapter never logs it nor puts it in an error.
	URL string
	// ResubscribeMin and ResubscribeMax bound the exponential backoff
	// between attempts to re-establish a dropped subscription: the first
	// retry waits ResubscribeMin, each further one twice as long, capped at
	// ResubscribeMax. The backoff starts again from ResubscribeMin once the
	// server delivers anything on the new subscription.
	ResubscribeMin, ResubscribeMax time.Duration
	// IdempotencyWindow is how many of a stream's most recent events an
	// Append inspects for the id of its first event (idempotent repeat).
	// Repeats of older appends are still found exactly for NoStream and
	// Exact expectations (see the package documentation).
	IdempotencyWindow int
	// StreamPrefix namespaces the log inside the server: stream "x" of the
	// port is stored as StreamPrefix+"x", and reads, subscriptions and
	// HeadPosition see only streams with the prefix. It lets several logs
	// share one cluster (environments, test runs). Empty means the whole
	// server, minus its system streams. Hashes are computed over the port's
	// stream id, without the prefix.
	StreamPrefix string
	// Now is the clock used when the server reports no creation time for
	// an event (RecordedAt). Defaults to time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.ResubscribeMin == 0 {
		c.ResubscribeMin = DefaultResubscribeMin
	}
	if c.ResubscribeMax == 0 {
		c.ResubscribeMax = DefaultResubscribeMax
		if c.ResubscribeMax < c.ResubscribeMin {
			c.ResubscribeMax = c.ResubscribeMin
		}
	}
	if c.IdempotencyWindow == 0 {
		c.IdempotencyWindow = DefaultIdempotencyWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once. It expects
// defaults to have been applied for the fields left zero.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is required"))
	} else if u, err := url.Parse(c.URL); err == nil && u.Scheme != "esdb" && u.Scheme != "esdb+discover" {
		errs = append(errs, errors.New("URL must use the esdb:// or esdb+discover:// scheme"))
	}
	// url.Parse rejects the multi-host form (host1:2113,host2:2113) that the
	// client accepts; the client's own parser reports real syntax errors.
	if c.ResubscribeMin <= 0 {
		errs = append(errs, fmt.Errorf("ResubscribeMin must be positive, got %s", c.ResubscribeMin))
	}
	if c.ResubscribeMax < c.ResubscribeMin {
		errs = append(errs, fmt.Errorf("ResubscribeMax (%s) must not be below ResubscribeMin (%s)", c.ResubscribeMax, c.ResubscribeMin))
	}
	if c.IdempotencyWindow < 1 || c.IdempotencyWindow > maxIdempotencyWindow {
		errs = append(errs, fmt.Errorf("IdempotencyWindow must be within 1..%d, got %d", maxIdempotencyWindow, c.IdempotencyWindow))
	}
	if strings.HasPrefix(c.StreamPrefix, "$") {
		errs = append(errs, errors.New("StreamPrefix must not start with '$' (reserved for system streams)"))
	}
	if c.Now == nil {
		errs = append(errs, errors.New("Now is required"))
	}
	return errors.Join(errs...)
}
