package sqlite

import (
	"errors"
	"time"
)

// Defaults applied by Open to the zero fields of Config.
const (
	DefaultMaxBatch     = 1024
	DefaultPollInterval = 200 * time.Millisecond
)

// Config configures Open.
type Config struct {
	// Path is the SQLite database file; it is created with its schema when
	// missing. Several processes may open the same file.
	Path string
	// MaxBatch caps how many events one group-commit transaction takes.
	// An append larger than MaxBatch is still taken, alone. Default 1024.
	// (One fsync may cover several transactions.)
	MaxBatch int
	// PollInterval is how often live subscriptions check whether another
	// process appended to the file (a cheap PRAGMA data_version). Appends
	// of this process wake subscriptions as soon as they are durable.
	// Default 200ms.
	PollInterval time.Duration
	// Now is the clock that stamps RecordedAt and fills a zero OccurredAt.
	// Default time.Now.
	Now func() time.Time

	// syncHook, set only by tests, runs every fsync of the write-ahead log
	// in place of calling sync directly: it may block before calling it,
	// or return an error instead.
	syncHook func(sync func() error) error
	// checkpointFrames overrides the constant of the same name in tests.
	checkpointFrames int64
}

func (c *Config) setDefaults() {
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.checkpointFrames == 0 {
		c.checkpointFrames = checkpointFrames
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if c.MaxBatch < 0 {
		errs = append(errs, errors.New("max batch must not be negative"))
	}
	if c.PollInterval < 0 {
		errs = append(errs, errors.New("poll interval must not be negative"))
	}
	return errors.Join(errs...)
}
