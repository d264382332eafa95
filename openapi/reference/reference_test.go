package reference_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cgp-platform/cgp/openapi"
	"github.com/cgp-platform/cgp/openapi/reference"
)

func loadYAML(t testing.TB, src string) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func render(t testing.TB, doc *openapi3.T, q string) string {
	t.Helper()
	ref, err := reference.Build(doc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := reference.Render(&buf, ref, q); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// small is a document with a scoped operation, a $ref'd request body, a
// recursive schema and a description that tries to inject markup.
const small = `
openapi: 3.1.0
info:
  title: Small API
  version: 0.0.1
  description: |
    Intro with **bold** and <script>alert(1)</script> and [a link](javascript:alert(2)).
tags:
  - name: things
    description: "Things. <img src=x onerror=alert(3)>"
paths:
  /api/v1/things:
    post:
      operationId: createThing
      tags: [things]
      summary: Create a thing
      description: Makes one. <script>alert(4)</script>
      x-required-scope: things:write
      x-service-stability: beta
      security:
        - bearerToken: ["things:write"]
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: "#/components/schemas/NewThing" }
            example: { name: lamp, color: red }
      responses:
        "201":
          description: Created.
          content:
            application/json:
              schema: { $ref: "#/components/schemas/Node" }
        "422":
          description: Invalid.
          content:
            application/json:
              schema:
                type: object
                properties:
                  error:
                    type: object
                    properties:
                      code: { type: string, enum: [validation_failed] }
  /api/v1/things/{id}:
    parameters:
      - name: id
        in: path
        required: true
        description: The thing's id.
        schema: { type: string }
    get:
      operationId: getThing
      tags: [things]
      summary: Read a thing
      x-required-scope: things:read
      x-service-stability: stable
      security:
        - bearerToken: ["things:read"]
      responses:
        "200":
          description: The thing.
  /webhooks/things:
    post:
      operationId: receiveThingWebhook
      summary: Inbound thing webhook
      security: []
      responses:
        "200":
          description: Accepted.
components:
  securitySchemes:
    bearerToken: { type: http, scheme: bearer }
  schemas:
    NewThing:
      type: object
      required: [name]
      properties:
        name: { type: string, description: "The thing's name." }
        color: { type: string, enum: [red, green], description: "Its colour." }
        tree: { $ref: "#/components/schemas/Node" }
    Node:
      type: object
      properties:
        label: { type: string, description: The node's label. }
        children:
          type: array
          items: { $ref: "#/components/schemas/Node" }
        parent: { $ref: "#/components/schemas/Node" }
`

func TestRenderSmallDocument(t *testing.T) {
	page := render(t, loadYAML(t, small), "")
	for _, want := range []string{
		`id="createThing"`, `href="#createThing"`, `id="getThing"`, `id="receiveThingWebhook"`,
		`/api/v1/things/{id}`, `/webhooks/things`,
		"scope <code>things:write</code>", "scope <code>things:read</code>", "bearerToken (things:write)",
		// The $ref'd request schema's properties, required and enum.
		"<code>name</code> <span class=\"req\">required</span>", "The thing's name.", "<code>red</code>", "<code>green</code>",
		// Path-level parameters.
		"<code>id</code> <span class=\"req\">required</span>", "The thing's id.",
		// Error codes and examples.
		`<code class="code">validation_failed</code>`, "&#34;lamp&#34;",
		"<strong>bold</strong>", `id="tag-things"`, `id="tag-other"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestRecursiveSchemaTerminates(t *testing.T) {
	ref, err := reference.Build(loadYAML(t, small))
	if err != nil {
		t.Fatal(err)
	}
	var rows []reference.Row
	for _, s := range ref.Sections {
		for _, op := range s.Operations {
			if op.ID == "createThing" {
				rows = op.Body.Contents[0].Rows
			}
		}
	}
	if len(rows) == 0 || len(rows) > 50 {
		t.Fatalf("%d rows for the request body", len(rows))
	}
	recursive := 0
	for _, r := range rows {
		if strings.HasPrefix(r.Note, "recursive: Node") {
			recursive++
		}
		if r.Name == "label" && r.Depth != 1 {
			t.Errorf("tree.label at depth %d, want 1", r.Depth)
		}
	}
	if recursive != 2 { // tree.children and tree.parent
		t.Errorf("%d rows marked recursive, want 2: %+v", recursive, rows)
	}
}

func TestDescriptionsCannotInjectMarkup(t *testing.T) {
	page := render(t, loadYAML(t, small), "")
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script>alert", "alert(1)</script>", "javascript:", "<img src=x", "onerror="} {
		if strings.Contains(lower, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// The only script element is the reference's own file.
	if n := strings.Count(lower, "<script"); n != 1 || !strings.Contains(page, `<script src="/docs/assets/docs.js?v=`) {
		t.Errorf("%d script elements", n)
	}
}

func TestFilterKeepsMatchingOperations(t *testing.T) {
	page := render(t, loadYAML(t, small), "webhook")
	if !strings.Contains(page, `id="receiveThingWebhook"`) || strings.Contains(page, `id="createThing"`) {
		t.Errorf("q=webhook did not filter")
	}
	if !strings.Contains(page, "1 of 3 operations match") {
		t.Errorf("no match count")
	}
	page = render(t, loadYAML(t, small), "THINGS:READ get")
	if !strings.Contains(page, `id="getThing"`) || strings.Contains(page, `id="createThing"`) {
		t.Errorf("q by scope and method did not filter")
	}
	page = render(t, loadYAML(t, small), "<script>nothing")
	if !strings.Contains(page, "No operation matches") || strings.Contains(page, "<script>nothing") {
		t.Errorf("no-match page wrong or the query is not escaped")
	}
}

// TestRealDocument renders openapi.yaml: every operation appears with its
// anchor, every path, and each admin operation's scope.
func TestRealDocument(t *testing.T) {
	doc := loadYAML(t, string(openapi.YAML()))
	page := render(t, doc, "")
	ops := 0
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops++
			if !strings.Contains(page, `<article class="op" id="`+op.OperationID+`"`) || !strings.Contains(page, `href="#`+op.OperationID+`"`) {
				t.Errorf("%s: no anchor", op.OperationID)
			}
			if scope, _ := op.Extensions["x-required-scope"].(string); scope != "" {
				re := regexp.MustCompile(`(?s)id="` + regexp.QuoteMeta(op.OperationID) + `".*?</h3>.*?scope <code>` + regexp.QuoteMeta(scope) + `</code>`)
				if !re.MatchString(page) {
					t.Errorf("%s: scope %s not shown", op.OperationID, scope)
				}
			}
		}
		if !strings.Contains(page, `<code class="path">`+strings.ReplaceAll(path, "&", "&amp;")+`</code>`) {
			t.Errorf("path %s missing", path)
		}
	}
	if ops < 50 {
		t.Errorf("only %d operations", ops)
	}
	// The same document renders the same bytes, so every replica of a
	// build serves the same ETag.
	if again := render(t, loadYAML(t, string(openapi.YAML())), ""); again != page {
		t.Errorf("two renders of the document differ")
	}
}

func TestSiteHeadersAndValidators(t *testing.T) {
	site := reference.New(openapi.YAML())
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", site.Landing())
	mux.Handle("GET /docs", site.Docs())
	mux.Handle("GET /docs/", site.Redirect())
	mux.Handle("GET /docs/assets/{name}", site.Assets())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp, b.String()
	}
	for _, path := range []string{"/", "/docs", "/docs?q=customers", "/docs/assets/docs.css", "/docs/assets/docs.js"} {
		resp, body := get(path)
		if resp.StatusCode != 200 || body == "" {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if resp.Header.Get("Content-Security-Policy") != reference.ContentSecurityPolicy || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
		etag := resp.Header.Get("ETag")
		if resp2, body2 := get(path, "If-None-Match", etag); etag == "" || resp2.StatusCode != http.StatusNotModified || body2 != "" {
			t.Errorf("%s: If-None-Match %q → %d", path, etag, resp2.StatusCode)
		}
		if resp3, _ := get(path, "If-None-Match", `"other"`); resp3.StatusCode != 200 {
			t.Errorf("%s: a stale ETag got %d", path, resp3.StatusCode)
		}
	}
	if resp, _ := get("/docs/assets/nothing.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown asset: %d", resp.StatusCode)
	}
	if resp, _ := get("/docs/?q=x"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/docs?q=x" {
		t.Errorf("/docs/: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get("/docs/assets/docs.js"); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("docs.js Content-Type %q", resp.Header.Get("Content-Type"))
	}
	_, landing := get("/")
	for _, link := range []string{`href="/docs"`, `href="/admin"`, `href="/api/v1/openapi.json"`} {
		if !strings.Contains(landing, link) {
			t.Errorf("landing page lacks %s", link)
		}
	}
	// No inline script or style anywhere: the CSP would block it.
	_, docs := get("/docs")
	for _, page := range []string{landing, docs} {
		if regexp.MustCompile(`<script>|<style|\sstyle=|\son[a-z]+=`).MatchString(page) {
			t.Errorf("a page holds inline script or style")
		}
	}
}

func BenchmarkRenderReference(b *testing.B) {
	doc := loadYAML(b, string(openapi.YAML()))
	b.ReportAllocs()
	for b.Loop() {
		ref, err := reference.Build(doc)
		if err != nil {
			b.Fatal(err)
		}
		if err := reference.Render(&bytes.Buffer{}, ref, ""); err != nil {
			b.Fatal(err)
		}
	}
}
