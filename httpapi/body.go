package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// DecodeData reads a {"data":{"attributes":{…}}} body into dst, a pointer to
// the attributes struct. data may also carry "type" and "id" strings, which
// are accepted and ignored (check them yourself when they matter). It returns:
//
//   - 413 payload_too_large when the body exceeds maxBytes;
//   - 415 unsupported_media_type when a non-empty body is not sent as
//     application/json (or application/…+json);
//   - 400 invalid_json for malformed JSON or data after the document;
//   - 422 validation_failed with details.field for a missing or non-object
//     data or data.attributes ("data", "data.attributes"), for an unknown
//     member or attribute (its path, e.g. "nickname" or "address.zip"), and
//     for an attribute of the wrong type (its path, e.g. "tags").
//
// Field paths of attributes are relative to data.attributes, as in
// validation errors raised later by the domain. An error returned by an
// UnmarshalJSON method of dst passes through unchanged when it is an *Error
// or a *domain.Error. A nil or non-pointer dst is a plain error (500).
func DecodeData(w http.ResponseWriter, r *http.Request, maxBytes int64, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode data: destination must be a non-nil pointer, got %T", dst)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return PayloadTooLarge(maxBytes)
		}
		return invalidJSON("the request body could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return ValidationFailed("data", bodyShape)
	}
	if !isJSONMediaType(r.Header.Get("Content-Type")) {
		return UnsupportedMediaType()
	}
	if !json.Valid(raw) {
		return invalidJSON("the request body is not valid JSON (one JSON document expected)")
	}

	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return ValidationFailed("data", "the request body must be a JSON object with a data member")
	}
	if _, ok := top["data"]; !ok {
		// A flat body ({"name":…}) gets the shape the empty body gets.
		return ValidationFailed("data", bodyShape)
	}
	if k := firstKeyNotIn(top, "data"); k != "" {
		return ValidationFailed(clip(k), "unknown member")
	}
	data, err := object(top["data"], "data")
	if err != nil {
		return err
	}
	if _, ok := data["attributes"]; !ok && firstKeyNotIn(data, "type", "id") != "" {
		// {"data":{"name":…}}: the attributes one level too high.
		return ValidationFailed("data.attributes", "is required: "+bodyShape)
	}
	if k := firstKeyNotIn(data, "attributes", "type", "id"); k != "" {
		return ValidationFailed(clip("data."+k), "unknown member")
	}
	for _, k := range []string{"type", "id"} {
		if v, ok := data[k]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return ValidationFailed("data."+k, "must be a string")
			}
		}
	}
	attrs, ok := data["attributes"]
	if !ok || isNull(attrs) {
		return ValidationFailed("data.attributes", "is required")
	}
	if _, err := object(attrs, "data.attributes"); err != nil {
		return err
	}
	if path := unknownField(rv.Type(), attrs, ""); path != "" {
		return ValidationFailed(clip(path), "unknown attribute")
	}

	dec := json.NewDecoder(bytes.NewReader(attrs))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return attributeError(err)
	}
	return nil
}

// bodyShape is the message of a body that is not {"data":{"attributes":…}}.
const bodyShape = `the request body must be {"data":{"attributes":{…}}}, with the attributes inside data.attributes`

func attributeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "data.attributes"
		}
		return ValidationFailed(clip(field), "must be "+jsonKind(typeErr.Type))
	}
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	if isDomainError(err) {
		return err
	}
	// Anything else (an unknown field unknownField missed, a custom
	// unmarshaler's plain error): reject without echoing its text.
	return ValidationFailed("data.attributes", "the attributes are invalid")
}

// object decodes raw as a JSON object, with a 422 on field when it is
// missing, null or not an object.
func object(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	if raw == nil || isNull(raw) {
		return nil, ValidationFailed(field, "is required")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, ValidationFailed(field, "must be an object")
	}
	return m, nil
}

func isDomainError(err error) bool {
	var de *domain.Error
	return errors.As(err, &de)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func firstKeyNotIn(m map[string]json.RawMessage, allowed ...string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(allowed, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	return keys[0]
}

func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// jsonKind names the JSON type a Go type expects, for messages.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "of another type"
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unknownField returns the path of the first member of raw (in key order)
// that t has no field for, matching JSON names exactly (encoding/json would
// match them case-insensitively; we are stricter on purpose), or "". It
// descends into nested structs, slices and maps; values that do not have the
// expected JSON shape are left for the decoder to report.
func unknownField(t reflect.Type, raw json.RawMessage, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return ""
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				return joinPath(path, k)
			}
			if u := unknownField(ft, obj[k], joinPath(path, k)); u != "" {
				return u
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "" // []byte is a base64 string
		}
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return ""
		}
		for _, it := range items {
			if u := unknownField(t.Elem(), it, path); u != "" {
				return u
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if u := unknownField(t.Elem(), obj[k], joinPath(path, k)); u != "" {
				return u
			}
		}
	}
	return ""
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonFields maps the JSON member names of struct t to their types, with
// untagged embedded structs flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
