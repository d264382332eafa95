package reference

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

var templates = template.Must(template.ParseFS(templateFiles, "templates/*.html"))

// ContentSecurityPolicy is the policy of every page and asset: nothing from
// elsewhere, no inline script or style, no framing.
const ContentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// maxQuery bounds the search text taken from ?q=.
const maxQuery = 200

// asset is one embedded file with its validator.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Site serves the reference and the landing page. The document is parsed
// and the full reference rendered once, at the first request for it; the
// landing page and the assets need no document.
type Site struct {
	yaml   []byte
	build  func() (*rendered, error)
	assets map[string]asset
	// css and js are the assets' addresses, with their ETag as a version
	// so a new build is fetched again.
	css, js string
	landing asset
}

type rendered struct {
	ref  *Reference
	page asset
}

// New returns the site of the OpenAPI document yaml (openapi.YAML()). It
// panics if an embedded asset or template is missing, which the package's
// tests rule out.
func New(yaml []byte) *Site {
	s := &Site{yaml: yaml, assets: map[string]asset{}}
	for _, name := range []string{"docs.css", "docs.js"} {
		b, err := assetFiles.ReadFile("assets/" + name)
		if err != nil {
			panic("reference: embedded asset missing: " + err.Error())
		}
		s.assets[name] = newAsset(b, mime.TypeByExtension(path.Ext(name)))
	}
	s.css = "/docs/assets/docs.css?v=" + strings.Trim(s.assets["docs.css"].etag, `"`)
	s.js = "/docs/assets/docs.js?v=" + strings.Trim(s.assets["docs.js"].etag, `"`)
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "landing.html", map[string]string{"CSS": s.css}); err != nil {
		panic("reference: landing page: " + err.Error())
	}
	s.landing = newAsset(buf.Bytes(), "text/html; charset=utf-8")
	s.build = sync.OnceValues(func() (*rendered, error) {
		doc, err := openapi3.NewLoader().LoadFromData(s.yaml)
		if err != nil {
			return nil, fmt.Errorf("load the OpenAPI document: %w", err)
		}
		ref, err := Build(doc)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := s.render(&buf, ref, ""); err != nil {
			return nil, err
		}
		return &rendered{ref: ref, page: newAsset(buf.Bytes(), "text/html; charset=utf-8")}, nil
	})
	return s
}

func newAsset(body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	return asset{body: body, contentType: contentType, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
}

type pageData struct {
	Ref      *Reference
	Sections []Section
	Query    string
	Matched  int
	CSS, JS  string
}

// Render writes the reference page of ref, filtered by q (see
// Reference.Filter), with the site's asset addresses.
func (s *Site) render(w io.Writer, ref *Reference, q string) error {
	sections, matched := ref.Filter(q)
	data := pageData{Ref: ref, Sections: sections, Query: q, Matched: matched, CSS: s.css, JS: s.js}
	if err := templates.ExecuteTemplate(w, "docs.html", data); err != nil {
		return fmt.Errorf("render the reference: %w", err)
	}
	return nil
}

// Render writes ref's reference page filtered by q, as GET /docs?q= serves
// it.
func Render(w io.Writer, ref *Reference, q string) error {
	return New(nil).render(w, ref, q)
}

// Docs serves GET /docs: the whole reference, or with ?q= the operations
// matching it (rendered per request).
func (s *Site) Docs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		built, err := s.build()
		if err != nil {
			// The embedded document is checked by the tests: this is a
			// broken build, not a client error.
			http.Error(w, "the API reference could not be built", http.StatusInternalServerError)
			return
		}
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		if len(q) > maxQuery {
			q = q[:maxQuery]
		}
		if q == "" {
			serve(w, r, built.page, "no-cache")
			return
		}
		var buf bytes.Buffer
		if err := s.render(&buf, built.ref, q); err != nil {
			http.Error(w, "the API reference could not be rendered", http.StatusInternalServerError)
			return
		}
		serve(w, r, newAsset(buf.Bytes(), "text/html; charset=utf-8"), "no-cache")
	})
}

// Assets serves GET /docs/assets/{name}: the stylesheet and the script,
// named by the last segment of the path.
func (s *Site) Assets() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := s.assets[path.Base(r.URL.Path)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		serve(w, r, a, "public, max-age=86400")
	})
}

// Redirect serves GET /docs/: a permanent redirect to /docs that keeps
// the query.
func (s *Site) Redirect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := "/docs"
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
	})
}

// Landing serves GET /: the service's name and links to the admin
// interface, the reference and the OpenAPI document.
func (s *Site) Landing() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, s.landing, "no-cache")
	})
}

// serve writes a with its validator: a matching If-None-Match is a 304.
func serve(w http.ResponseWriter, r *http.Request, a asset, cacheControl string) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", a.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body) // a failed write means the client went away
}

func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		c := strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if c == etag || c == "*" {
			return true
		}
	}
	return false
}
