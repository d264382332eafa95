package openapi

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/oasdiff/yaml"
)

//go:embed openapi.yaml
var files embed.FS

const documentFile = "openapi.yaml"

// YAML returns the document as written.
func YAML() []byte {
	b, err := files.ReadFile(documentFile)
	if err != nil {
		panic("openapi: embedded document missing: " + err.Error()) // cannot happen: go:embed checked it at build
	}
	return b
}

// converted is the document in JSON, converted once per process (the
// conversion of the whole document takes a second or more, and every
// server start, every test server's too, serves it).
var converted struct {
	once sync.Once
	doc  []byte
	err  error
}

// JSON returns the document converted to JSON. The slice is shared:
// callers must not change it.
func JSON() ([]byte, error) {
	converted.once.Do(func() {
		b, err := yaml.YAMLToJSON(YAML())
		if err != nil {
			converted.err = fmt.Errorf("convert openapi.yaml to JSON: %w", err)
			return
		}
		converted.doc = b
	})
	return converted.doc, converted.err
}

// Handler serves the document as application/json, converted once per
// process, with an ETag so clients can revalidate cheaply. It
// panics if the embedded document is not valid YAML, which the package's
// tests rule out before any release.
func Handler() http.Handler {
	doc, err := JSON()
	if err != nil {
		panic("openapi: " + err.Error())
	}
	sum := sha256.Sum256(doc)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", "public, max-age=300")
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(doc) // a failed write means the client went away
	})
}
