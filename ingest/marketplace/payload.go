package marketplace

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Helpers shared by the payload parsers.

// flexID is an identifier sent as a JSON string or number, trimmed.
type flexID string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexID) UnmarshalJSON(b []byte) error {
	var t payload.Text
	if err := t.UnmarshalJSON(b); err != nil {
		return errors.New("an id must be a string or a number")
	}
	*f = flexID(strings.TrimSpace(string(t)))
	return nil
}

// flexTime is a time sent as Unix seconds (a number or a string of digits)
// or as RFC 3339.
type flexTime time.Time

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexTime) UnmarshalJSON(b []byte) error {
	var id flexID
	if err := id.UnmarshalJSON(b); err != nil {
		return err
	}
	s := string(id)
	if s == "" {
		*f = flexTime{}
		return nil
	}
	if at, ok := unixSeconds(s); ok {
		*f = flexTime(at)
		return nil
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errors.New("a time must be Unix seconds or RFC 3339")
	}
	*f = flexTime(at.UTC())
	return nil
}

// first returns the first non-empty id.
func first(ids ...flexID) string {
	for _, id := range ids {
		if id != "" {
			return string(id)
		}
	}
	return ""
}

// firstTime returns the first non-zero time.
func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// minorUnits turns an amount in minor units with its divisor (100 for
// cents) into an Amount; divisors are powers of ten up to AmountScale.
func minorUnits(amount int64, divisor int64) (*domain.Amount, error) {
	const limit = 1 << 50
	if amount < 0 || amount > limit {
		return nil, domain.Invalid("total", "total out of range")
	}
	for d := int64(1); d <= domain.AmountScale; d *= 10 {
		if d == divisor {
			a := domain.Amount(amount * (domain.AmountScale / divisor))
			return &a, nil
		}
	}
	return nil, domain.Invalid("total", "unsupported divisor %s", strconv.FormatInt(divisor, 10))
}

// decimal parses a decimal amount sent as a JSON string or number.
func decimal(raw json.RawMessage) (*domain.Amount, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s flexID
	if err := s.UnmarshalJSON(raw); err != nil {
		return nil, domain.Invalid("total", "total must be a decimal amount")
	}
	a, err := domain.ParseAmount(string(s))
	if err != nil {
		return nil, domain.Invalid("total", "total must be a decimal amount")
	}
	return &a, nil
}
