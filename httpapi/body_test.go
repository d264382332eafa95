package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

type address struct {
	City string `json:"city"`
	Zip  string `json:"zip"`
}

type patchAttrs struct {
	Tags    []string  `json:"tags"`
	Note    *string   `json:"note,omitempty"`
	Address *address  `json:"address"`
	History []address `json:"history"`
	Level   level     `json:"level"`
}

// level rejects "admin" with a domain error from its UnmarshalJSON.
type level string

func (l *level) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "admin" {
		return domain.Invalid("level", "admin is not allowed")
	}
	*l = level(s)
	return nil
}

const maxBody = 256

func bodyEnv(t *testing.T) *env {
	return newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPatch, "/c", func(w http.ResponseWriter, req *http.Request) {
			var in patchAttrs
			if err := httpapi.DecodeData(w, req, maxBody, &in); err != nil {
				httpapi.WriteError(w, req, err)
				return
			}
			httpapi.WriteResource(w, req, 200, httpapi.Resource{ID: "cus_1", Type: "customer", Attributes: in})
		})
	})
}

func TestDecodeDataAccepts(t *testing.T) {
	e := bodyEnv(t)
	for _, tc := range []struct{ body, ct string }{
		{`{"data":{"attributes":{"tags":["vip","b2b"]}}}`, "application/json"},
		{` {"data":{"type":"customer","id":"cus_1","attributes":{"tags":["vip","b2b"]}}} ` + "\n", "application/json; charset=utf-8"},
		{`{"data":{"attributes":{"tags":["vip","b2b"],"address":{"city":"Lyon"}}}}`, "application/vnd.api+json"},
	} {
		r := e.do(t, http.MethodPatch, "/c", tc.body, "Content-Type", tc.ct)
		if r.status != 200 || !strings.Contains(string(r.body), `"tags":["vip","b2b"]`) {
			t.Errorf("%s (%s): %d %s", tc.body, tc.ct, r.status, r.body)
		}
	}
}

func TestDecodeDataRejects(t *testing.T) {
	e := bodyEnv(t)
	big := `{"data":{"attributes":{"tags":["` + strings.Repeat("x", maxBody) + `"]}}}`
	cases := []struct {
		name, body, ct string
		status         int
		code, field    string
	}{
		{"too large", big, "application/json", 413, "payload_too_large", ""},
		{"text/plain", `{"data":{"attributes":{}}}`, "text/plain", 415, "unsupported_media_type", ""},
		{"no content type", `{"data":{"attributes":{}}}`, "", 415, "unsupported_media_type", ""},
		{"malformed", `{"data":{"attributes":{`, "application/json", 400, "invalid_json", ""},
		{"not json", `tags=vip`, "application/json", 400, "invalid_json", ""},
		{"trailing data", `{"data":{"attributes":{}}} {}`, "application/json", 400, "invalid_json", ""},
		{"empty body", ``, "", 422, "validation_failed", "data"},
		{"empty object", `{}`, "application/json", 422, "validation_failed", "data"},
		{"array", `[]`, "application/json", 422, "validation_failed", "data"},
		{"data null", `{"data":null}`, "application/json", 422, "validation_failed", "data"},
		{"data string", `{"data":"x"}`, "application/json", 422, "validation_failed", "data"},
		{"no attributes", `{"data":{}}`, "application/json", 422, "validation_failed", "data.attributes"},
		{"attributes null", `{"data":{"attributes":null}}`, "application/json", 422, "validation_failed", "data.attributes"},
		{"attributes array", `{"data":{"attributes":[]}}`, "application/json", 422, "validation_failed", "data.attributes"},
		{"unknown top member", `{"data":{"attributes":{}},"meta":{}}`, "application/json", 422, "validation_failed", "meta"},
		{"unknown data member", `{"data":{"attributes":{},"relationships":{}}}`, "application/json", 422, "validation_failed", "data.relationships"},
		{"type not string", `{"data":{"type":1,"attributes":{}}}`, "application/json", 422, "validation_failed", "data.type"},
		{"unknown attribute", `{"data":{"attributes":{"tags":[],"nickname":"J"}}}`, "application/json", 422, "validation_failed", "nickname"},
		{"case variant", `{"data":{"attributes":{"Tags":["a"]}}}`, "application/json", 422, "validation_failed", "Tags"},
		{"nested unknown", `{"data":{"attributes":{"address":{"city":"x","zip2":"1"}}}}`, "application/json", 422, "validation_failed", "address.zip2"},
		{"unknown in array item", `{"data":{"attributes":{"history":[{"city":"x"},{"street":"y"}]}}}`, "application/json", 422, "validation_failed", "history.street"},
		{"tags not array", `{"data":{"attributes":{"tags":"vip"}}}`, "application/json", 422, "validation_failed", "tags"},
		{"tag not string", `{"data":{"attributes":{"tags":[1]}}}`, "application/json", 422, "validation_failed", "tags"},
		{"nested wrong type", `{"data":{"attributes":{"address":{"zip":75001}}}}`, "application/json", 422, "validation_failed", "address.zip"},
		{"domain error from unmarshaler", `{"data":{"attributes":{"level":"admin"}}}`, "application/json", 422, "validation_failed", "level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.ct != "" {
				hdr = []string{"Content-Type", c.ct}
			}
			r := e.do(t, http.MethodPatch, "/c", c.body, hdr...)
			if r.status != c.status {
				t.Fatalf("status = %d, want %d: %s", r.status, c.status, r.body)
			}
			doc := errorOf(t, r)
			if doc.Error.Code != c.code {
				t.Errorf("code = %q, want %q", doc.Error.Code, c.code)
			}
			if c.field != "" && doc.Error.Details["field"] != c.field {
				t.Errorf("details.field = %v, want %q", doc.Error.Details["field"], c.field)
			}
		})
	}
}

func TestDecodeDataNeedsPointer(t *testing.T) {
	req := httptest.NewRequest(http.MethodPatch, "/c", strings.NewReader(`{"data":{"attributes":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	for _, dst := range []any{patchAttrs{}, nil, (*patchAttrs)(nil)} {
		err := httpapi.DecodeData(httptest.NewRecorder(), req, 1024, dst)
		var he *httpapi.Error
		if err == nil || errors.As(err, &he) {
			t.Errorf("dst %T: err = %v, want a plain error", dst, err)
		}
	}
}
