package sqlite

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/eventlog"
)

// decodeMetadata decodes the metadata column (the JSON that json.Marshal
// wrote for an eventlog.Metadata). Catch-up reads decode it for every
// event, so the compact form json.Marshal produces is parsed by hand; any
// other input (escapes, spaces, unknown or differently cased keys, null) is
// left to encoding/json, so the result is always what json.Unmarshal gives.
func decodeMetadata(raw string, m *eventlog.Metadata) error {
	if raw == "" || raw == "{}" {
		return nil
	}
	var fast eventlog.Metadata
	if parseCompactMetadata(raw, &fast) {
		*m = fast
		return nil
	}
	return json.Unmarshal([]byte(raw), m)
}

// parseCompactMetadata parses {"key":"value",…,"key_ids":["…",…]} with the
// exact keys of eventlog.Metadata and strings without escapes. It reports
// false, leaving the work to encoding/json, on anything else.
func parseCompactMetadata(s string, m *eventlog.Metadata) bool {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return false
	}
	s = s[1 : len(s)-1]
	for len(s) > 0 {
		key, rest, ok := compactString(s)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		rest = rest[1:]
		if key == "key_ids" {
			if len(rest) == 0 || rest[0] != '[' {
				return false
			}
			rest = rest[1:]
			ids := []string{}
			for len(rest) > 0 && rest[0] != ']' {
				var id string
				if id, rest, ok = compactString(rest); !ok {
					return false
				}
				ids = append(ids, id)
				if len(rest) > 0 && rest[0] == ',' {
					rest = rest[1:]
					if len(rest) == 0 || rest[0] == ']' {
						return false
					}
				} else if len(rest) == 0 || rest[0] != ']' {
					return false
				}
			}
			if len(rest) == 0 {
				return false
			}
			rest = rest[1:]
			m.KeyIDs = ids
		} else {
			var val string
			if val, rest, ok = compactString(rest); !ok {
				return false
			}
			switch key {
			case "correlation_id":
				m.CorrelationID = val
			case "causation_id":
				m.CausationID = val
			case "actor":
				m.Actor = val
			case "source":
				m.Source = val
			default:
				return false
			}
		}
		if len(rest) == 0 {
			return true
		}
		if rest[0] != ',' || len(rest) == 1 {
			return false
		}
		s = rest[1:]
	}
	return false
}

// compactString reads a JSON string without escapes at the start of s and
// returns its content and the rest of s.
func compactString(s string) (val, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			val = s[1:i]
			return val, s[i+1:], utf8.ValidString(val)
		case c == '\\' || c < 0x20:
			return "", "", false
		}
	}
	return "", "", false
}
