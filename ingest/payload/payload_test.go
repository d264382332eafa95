package payload_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// invalidOn reports whether err is a validation *domain.Error naming field.
func invalidOn(err error, field string) bool {
	var de *domain.Error
	return errors.As(err, &de) && de.Code == domain.CodeInvalid && de.Field == field
}

func TestDecodeKeepsNumbersExact(t *testing.T) {
	var v struct {
		ID    json.Number `json:"id"`
		Other any         `json:"other"`
	}
	if err := payload.Decode([]byte(`{"id": 820982911946154508, "other": 19.90} `+"\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != "820982911946154508" || v.Other != json.Number("19.90") {
		t.Fatalf("decoded %+v", v)
	}
}

func TestDecodeRefusesWhatIsNotOneValue(t *testing.T) {
	for name, body := range map[string]string{
		"empty":         ``,
		"white space":   "  \n",
		"malformed":     `{"id":`,
		"not JSON":      `id=1`,
		"trailing data": `{"id":1} {"id":2}`,
		"trailing junk": `{"id":1}x`,
		"wrong type":    `{"id":"one"}`,
		"not an object": `[1]`,
	} {
		var v struct {
			ID int64 `json:"id"`
		}
		if err := payload.Decode([]byte(body), &v); !invalidOn(err, payload.Field) {
			t.Errorf("%s: error %v, want a validation error on %q", name, err, payload.Field)
		}
	}
}

func TestDecodeFieldNamesThePart(t *testing.T) {
	var v map[string]any
	if err := payload.DecodeField([]byte(`{"a":1}]`), &v, "entry"); !invalidOn(err, "entry") {
		t.Fatalf("error %v, want a validation error on entry", err)
	}
	if err := payload.DecodeField([]byte(`{"a":1}`), &v, "entry"); err != nil || v["a"] != json.Number("1") {
		t.Fatalf("decoded %v, %v", v, err)
	}
}

func TestText(t *testing.T) {
	var v struct {
		Text, Number, Big, Null, Absent payload.Text
	}
	body := `{"Text":" 19.90 ","Number":131047,"Big":12345678901234567890.10,"Null":null}`
	if err := payload.Decode([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Text != " 19.90 " || v.Number != "131047" || v.Big.String() != "12345678901234567890.10" || v.Null != "" || v.Absent != "" {
		t.Fatalf("decoded %+v", v)
	}
	for _, value := range []string{`true`, `false`, `{}`, `[]`, `["1"]`} {
		var tx payload.Text
		if err := payload.Decode([]byte(value), &tx); !invalidOn(err, payload.Field) {
			t.Errorf("%s: error %v, want a validation error", value, err)
		}
	}
}
