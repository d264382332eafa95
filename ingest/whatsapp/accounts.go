package whatsapp

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaxAccounts bounds the distinct business accounts one body may name;
// a body naming more is refused before any lookup.
const MaxAccounts = 50

// AccountIDs returns the distinct business account ids a body names in
// entry[].id, in order of appearance, reading the body as far as it is
// well-formed JSON: the receiver must know whose app secret to verify the
// signature with before it can trust, or fully parse, anything else.
//
// Keys are matched without regard to case and every occurrence counts, as
// encoding/json would match them; the receiver still checks that each
// entry it processes names an account it verified.
func AccountIDs(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	s := scanner{dec: dec, seen: map[string]bool{}}
	s.object(func(key string) bool {
		if !strings.EqualFold(key, "entry") {
			return s.skip()
		}
		return s.array(func() bool {
			return s.object(func(key string) bool {
				if !strings.EqualFold(key, "id") {
					return s.skip()
				}
				return s.id()
			})
		})
	})
	return s.ids
}

// scanner walks JSON tokens; every method returns false once the input
// ends or stops being well-formed, which ends the walk.
type scanner struct {
	dec  *json.Decoder
	ids  []string
	seen map[string]bool
}

// object reads an object, calling member for each key with the decoder
// before the key's value (member must consume it). A value that is not an
// object is skipped.
func (s *scanner) object(member func(key string) bool) bool {
	t, err := s.dec.Token()
	if err != nil {
		return false
	}
	if t != json.Delim('{') {
		return s.rest(t)
	}
	for s.dec.More() {
		k, err := s.dec.Token()
		if err != nil {
			return false
		}
		key, _ := k.(string)
		if !member(key) {
			return false
		}
	}
	_, err = s.dec.Token() // '}'
	return err == nil
}

// array reads an array, calling elem for each element (elem must consume
// it). A value that is not an array is skipped.
func (s *scanner) array(elem func() bool) bool {
	t, err := s.dec.Token()
	if err != nil {
		return false
	}
	if t != json.Delim('[') {
		return s.rest(t)
	}
	for s.dec.More() {
		if !elem() {
			return false
		}
	}
	_, err = s.dec.Token() // ']'
	return err == nil
}

// id reads an id value: a string or number is collected.
func (s *scanner) id() bool {
	t, err := s.dec.Token()
	if err != nil {
		return false
	}
	var v string
	switch x := t.(type) {
	case string:
		v = x
	case json.Number:
		v = x.String()
	default:
		return s.rest(t)
	}
	if !s.seen[v] {
		s.seen[v] = true
		s.ids = append(s.ids, v)
	}
	return true
}

// skip consumes one value.
func (s *scanner) skip() bool {
	t, err := s.dec.Token()
	if err != nil {
		return false
	}
	return s.rest(t)
}

// rest consumes the remainder of a value whose first token is t.
func (s *scanner) rest(t json.Token) bool {
	if t != json.Delim('{') && t != json.Delim('[') {
		return true
	}
	for depth := 1; depth > 0; {
		t, err := s.dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return true
}
