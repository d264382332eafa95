package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
)

// Field is the field a Decode failure names.
const Field = "body"

// Decode reads exactly one JSON value from body into v, numbers as
// json.Number. A body that is not one JSON value (malformed, empty, or
// followed by anything but white space) or does not fit v fails with a
// validation *domain.Error on Field. The decoder's error is not kept: it
// can quote a value of the body.
func Decode(body []byte, v any) error {
	return DecodeField(body, v, Field)
}

// DecodeField is Decode for a part of a payload (an entry, a change's
// value): a failure names field instead of Field.
func DecodeField(b []byte, v any, field string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return domain.Invalid(field, "malformed payload")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return domain.Invalid(field, "trailing data after payload")
	}
	return nil
}

// Text is a JSON string, number or null kept as text: a string as sent
// (not trimmed), a number as written (no float rounding), null as "".
// Any other JSON value fails to unmarshal.
type Text string

// errNotText is the failure of a value that is neither a string, a number
// nor null.
var errNotText = errors.New("a value must be a string, a number or null")

// UnmarshalJSON implements json.Unmarshaler.
func (t *Text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case len(b) > 1 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b):
		// The decoder hands over a valid JSON value: a string without
		// escapes is its bytes between the quotes (the common case, and
		// the hot path of every money field).
		*t = Text(b[1 : len(b)-1])
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = Text(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return errNotText
		}
		*t = Text(n)
	}
	return nil
}

// String returns the text.
func (t Text) String() string { return string(t) }
