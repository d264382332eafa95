package postgres

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/internal/pgschema"
)

// Defaults applied by Open to the zero fields of Config.
const (
	DefaultSchema       = "cgp_eventlog"
	DefaultMaxBatch     = 512
	DefaultPollInterval = time.Second
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Config configures Open.
type Config struct {
	// URL is the pgx connection string (URL or key=value), pool settings
	// such as pool_max_conns included. It may carry a password: the
	// adapter never logs it nor puts it in an error. A Log holds one
	// connection for its writer and one for its listener, besides the pool
	// (pool_max_conns) its reads and stream-metadata writes share.
	URL string
	// Schema holds the log's tables; it is created when missing. Lower-case
	// letters, digits and underscores. When empty, the first schema of the
	// URL's search_path parameter is used, else DefaultSchema. Several logs
	// may live in one database, each in its own schema.
	Schema string
	// MaxBatch caps how many events one group-commit transaction takes. An
	// append larger than MaxBatch is still taken, alone. Default 512.
	MaxBatch int
	// PollInterval is how often an idle subscription reads the log again
	// when no notification woke it: the fallback for a notification lost
	// while the listening connection was down. Default 1s.
	PollInterval time.Duration
	// Now is the clock that stamps RecordedAt and fills a zero OccurredAt.
	// Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Schema == "" {
		c.Schema = pgschema.FromURL(c.URL)
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is required"))
	} else if _, err := pgx.ParseConfig(c.URL); err != nil {
		// The parse error may quote the URL, password included: drop it.
		errs = append(errs, errors.New("URL does not parse as a PostgreSQL connection string"))
	}
	if c.Schema != "" && !schemaName.MatchString(c.Schema) {
		errs = append(errs, fmt.Errorf("schema %q: want lower-case letters, digits and underscores, at most 63", c.Schema))
	}
	if c.MaxBatch < 0 {
		errs = append(errs, errors.New("max batch must not be negative"))
	}
	if c.PollInterval < 0 {
		errs = append(errs, errors.New("poll interval must not be negative"))
	}
	return errors.Join(errs...)
}
