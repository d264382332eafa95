package shopify

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// decimal is a money value as the platform sends it: usually a JSON string
// ("19.90"), in some payloads a JSON number (19.9), or null. It keeps the
// text for domain.ParseAmount so no float rounding happens.
type decimal = payload.Text

// conv converts raw payload fields, keeping the first failure so a parser
// reads as a list of fields and checks the error once.
type conv struct {
	err error
}

func (c *conv) fail(field, msg string) {
	if c.err == nil {
		c.err = domain.Invalid(field, "%s", msg)
	}
}

// id converts a required numeric id.
func (c *conv) id(field string, n json.Number) string {
	s := strings.TrimSpace(n.String())
	if s == "" {
		c.fail(field, "id is required")
		return ""
	}
	return c.optID(field, n)
}

// optID converts an optional numeric id ("" when absent or null).
func (c *conv) optID(field string, n json.Number) string {
	s := strings.TrimSpace(n.String())
	if s == "" {
		return ""
	}
	if len(s) > 20 {
		c.fail(field, "malformed id")
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			c.fail(field, "malformed id")
			return ""
		}
	}
	return s
}

// ids converts a list of numeric ids.
func (c *conv) ids(field string, ns []json.Number) []string {
	if len(ns) == 0 {
		return nil
	}
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, c.id(field, n))
	}
	return out
}

// str requires a non-empty string (an id that is not numeric: a token, a
// GraphQL id).
func (c *conv) str(field, s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		c.fail(field, "id is required")
	}
	return s
}

// amount converts an optional money value (0 when absent or null).
func (c *conv) amount(field string, d decimal) domain.Amount {
	if strings.TrimSpace(string(d)) == "" {
		return 0
	}
	a, err := domain.ParseAmount(string(d))
	if err != nil {
		c.fail(field, "malformed amount")
		return 0
	}
	return a
}

// optAmount converts a nullable money value (nil when absent or null).
func (c *conv) optAmount(field string, d decimal) *domain.Amount {
	if strings.TrimSpace(string(d)) == "" {
		return nil
	}
	a := c.amount(field, d)
	return &a
}

// time converts an optional ISO 8601 timestamp with offset to UTC (the zero
// time when absent or null).
func (c *conv) time(field, s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		c.fail(field, "not an ISO 8601 timestamp")
		return time.Time{}
	}
	return t.UTC()
}
