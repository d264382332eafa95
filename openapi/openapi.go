package openapi

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

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

// JSON returns the document converted to JSON.
func JSON() ([]byte, error) {
	b, err := yaml.YAMLToJSON(YAML())
	if err != nil {
		return nil, fmt.Errorf("convert openapi.yaml to JSON: %w", err)
	}
	return b, nil
}

// Handler serves the document as application/json, converted once when
// Handler is called, with an ETag so clients can revalidate cheaply. It
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
