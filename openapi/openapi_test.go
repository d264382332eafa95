package openapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cgp-platform/cgp/openapi"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.YAML())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDocumentLoadsAndValidates(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	// Validate checks the structure, every $ref and every example against
	// its schema.
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
		t.Fatal(err)
	}
}

func TestEveryOperationDeclaresStabilityAndScope(t *testing.T) {
	doc := load(t)
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: missing or repeated operationId %q", name, op.OperationID)
			}
			ids[op.OperationID] = true
			switch op.Extensions["x-service-stability"] {
			case "stable", "beta":
			default:
				t.Errorf("%s: x-service-stability = %v", name, op.Extensions["x-service-stability"])
			}
			admin := strings.HasPrefix(path, "/api/v1/") && path != "/api/v1/openapi.json"
			scope, _ := op.Extensions["x-required-scope"].(string)
			if admin != (scope != "") {
				t.Errorf("%s: x-required-scope = %q (admin operation: %v)", name, scope, admin)
			}
			if admin {
				// "any" (any valid token) and "master" (a master token)
				// carry no scope in the security requirement.
				want := []string{scope}
				if scope == "any" || scope == "master" {
					want = []string{}
				}
				// The image-operations API proper takes image-API keys only,
				// their scope listed as the requirement's role (OpenAPI 3.1).
				scheme := "bearerToken"
				if strings.HasPrefix(path, "/api/v1/images") {
					scheme = "imageAPIKey"
				}
				if op.Security == nil || len(*op.Security) != 1 && scheme == "imageAPIKey" || len(*op.Security) < 1 ||
					!slices.Equal((*op.Security)[0][scheme], want) {
					t.Errorf("%s: security does not require %s with %q", name, scheme, scope)
				}
				for _, status := range []string{"401", "403", "429", "500", "503"} {
					if op.Responses.Value(status) == nil {
						t.Errorf("%s: no %s response", name, status)
					}
				}
			}
		}
	}
}

// TestDesignErrorCasesAreReusableResponses keeps a reusable response for
// every row of DESIGN.md §7, each showing its error.code.
func TestDesignErrorCasesAreReusableResponses(t *testing.T) {
	doc := load(t)
	want := map[string]string{
		"AuthenticationRequired": "authentication_required", "InvalidToken": "invalid_token",
		"PlanRequired": "plan_required", "ScopeRequired": "scope_required",
		"ValidationFailed": "validation_failed", "InvalidParameter": "invalid_parameter",
		"InvalidCursor": "invalid_cursor", "InvalidJSON": "invalid_json", "NotFound": "not_found",
		"IdempotencyKeyReused": "idempotency_key_reused", "IdempotencyKeyInUse": "idempotency_key_in_use",
		"RateLimited": "rate_limited", "TooManyFailedAttempts": "too_many_failed_attempts",
		"IPBlocked": "ip_blocked", "CreditsExhausted": "credits_exhausted", "Unavailable": "unavailable",
		"PayloadTooLarge": "payload_too_large", "MethodNotAllowed": "method_not_allowed",
		"UnsupportedMediaType": "unsupported_media_type", "InternalError": "internal_error",
	}
	for name, code := range want {
		ref := doc.Components.Responses[name]
		if ref == nil || ref.Value == nil {
			t.Errorf("components.responses.%s is missing", name)
			continue
		}
		mt := ref.Value.Content.Get("application/json")
		if mt == nil {
			t.Errorf("%s: no application/json content", name)
			continue
		}
		ex, _ := mt.Example.(map[string]any)
		errObj, _ := ex["error"].(map[string]any)
		if errObj["code"] != code {
			t.Errorf("%s: example code = %v, want %s", name, errObj["code"], code)
		}
		if ref.Value.Headers["X-Request-Id"] == nil {
			t.Errorf("%s: no X-Request-Id header", name)
		}
	}
	for _, name := range []string{"RateLimited", "TooManyFailedAttempts", "IPBlocked", "Unavailable"} {
		if ref := doc.Components.Responses[name]; ref != nil && ref.Value.Headers["Retry-After"] == nil {
			t.Errorf("%s: no Retry-After header", name)
		}
	}
}

func TestHandlerServesTheDocumentAsJSON(t *testing.T) {
	srv := httptest.NewServer(openapi.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var served map[string]any
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	if served["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v", served["openapi"])
	}
	// The JSON is the YAML, converted: same document once loaded.
	fromJSON, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(load(t))
	if !reflect.DeepEqual(a, b) {
		t.Error("the served JSON differs from openapi.yaml")
	}

	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", resp.StatusCode)
	}
}
