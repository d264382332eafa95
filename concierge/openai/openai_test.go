package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/openai"
)

const (
	apiKey = "sk-test-0123456789abcdefABCDEFabcd"
	model  = "gpt-4o-mini"
)

// received is one request the fake API took.
type received struct {
	Method, Path, Authorization, ContentType string
	Body                                     []byte
}

// fakeAPI serves the documented contract of POST /v1/chat/completions: it
// records each request and answers with the status, headers and body it
// was given.
type fakeAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []received
	status   int
	header   http.Header
	body     []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{status: http.StatusOK, body: readTestdata(t, "completion.json")}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, received{
			Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
			ContentType: r.Header.Get("Content-Type"), Body: b,
		})
		status, header, body := f.status, f.header, f.body
		f.mu.Unlock()
		for k, vs := range header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) answer(status int, header http.Header, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.header, f.body = status, header, body
}

// answerContent answers with a chat completion whose message content is
// content and whose finish reason is finish.
func (f *fakeAPI) answerContent(t *testing.T, content any, finish string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952, "model": model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.answer(http.StatusOK, nil, b)
}

func (f *fakeAPI) taken() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.requests...)
}

func (f *fakeAPI) client(t *testing.T) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: f.srv.URL + "/v1/", APIKey: apiKey, Model: model, HTTP: f.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func question() concierge.Question {
	return concierge.Question{
		ShopName:  "Linen & Co",
		Text:      "Hi, where is my order #1043? Write to me at ada.lovelace@example.com or call +44 7700 900123.",
		FirstName: "Ada",
		Orders: []concierge.Order{{
			Name: "#1043", FinancialStatus: "paid", FulfillmentStatus: "fulfilled",
			CreatedAt:       time.Date(2026, 11, 3, 10, 0, 0, 0, time.FixedZone("CET", 3600)),
			TrackingCompany: "UPS", TrackingNumber: "1Z999AA10123456784",
			TrackingURL: "https://www.ups.com/track?tracknum=1Z999AA10123456784",
		}, {
			Name: "#1051", FinancialStatus: "pending", Cancelled: true,
			CreatedAt: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC),
		}},
		Policies: map[string]string{
			concierge.PolicyShipping: "We ship within 2 working days.",
			concierge.PolicyReturns:  "Returns within 30 days.",
			concierge.PolicyContact:  "   ",
		},
		History: []concierge.Message{
			{Role: concierge.RoleCustomer, Text: "my address is 12 Baker Street, London NW1 6XE"},
			{Role: concierge.RoleConcierge, Text: "Sorry, I don't know.", Unanswered: true},
		},
	}
}

func assertOneRequest(t *testing.T, f *fakeAPI) received {
	t.Helper()
	reqs := f.taken()
	if len(reqs) != 1 {
		t.Fatalf("the API got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost {
		t.Errorf("method %s, want POST", r.Method)
	}
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path %s, want /v1/chat/completions", r.Path)
	}
	if want := "Bearer " + apiKey; r.Authorization != want {
		t.Errorf("Authorization %q, want %q", r.Authorization, want)
	}
	if r.ContentType != "application/json" {
		t.Errorf("Content-Type %q, want application/json", r.ContentType)
	}
	return r
}

// keys returns every object key in a JSON document, at any depth.
func keys(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out = append(out, k)
			out = append(out, keys(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, keys(e)...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestAnswerPostsTheDocumentedRequestWithTheMinimumData(t *testing.T) {
	f := newFakeAPI(t)
	if _, err := f.client(t).Answer(context.Background(), question()); err != nil {
		t.Fatal(err)
	}
	r := assertOneRequest(t, f)
	var body struct {
		Model          string            `json:"model"`
		ResponseFormat map[string]string `json:"response_format"`
		Messages       []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	var top map[string]any
	_ = json.Unmarshal(r.Body, &top)
	if got := keys(top); !reflect.DeepEqual(got, []string{"content", "messages", "model", "response_format", "role", "type"}) {
		t.Errorf("request fields %q", got)
	}
	if body.Model != model {
		t.Errorf("model %q, want %q", body.Model, model)
	}
	if !reflect.DeepEqual(body.ResponseFormat, map[string]string{"type": "json_object"}) {
		t.Errorf("response_format %v, want json_object", body.ResponseFormat)
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		t.Fatalf("messages %+v, want a system and a user message", body.Messages)
	}
	system := body.Messages[0].Content
	// JSON mode requires the prompt to ask for JSON.
	for _, want := range []string{"JSON", `"answer"`, `"confidence"`, `"sources"`, "only the shop data"} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt does not say %q", want)
		}
	}
	const marker = "Shop data (JSON):\n"
	i := strings.Index(system, marker)
	if i < 0 {
		t.Fatal("system prompt has no shop data")
	}
	var data any
	if err := json.Unmarshal([]byte(system[i+len(marker):]), &data); err != nil {
		t.Fatalf("shop data is not JSON: %v", err)
	}
	wantData := `{
		"shop": "Linen & Co",
		"customer_first_name": "Ada",
		"orders": [
			{"name": "#1043", "financial_status": "paid", "fulfillment_status": "fulfilled",
			 "created_at": "2026-11-03T09:00:00Z", "tracking_company": "UPS",
			 "tracking_number": "1Z999AA10123456784", "tracking_url": "https://www.ups.com/track?tracknum=1Z999AA10123456784"},
			{"name": "#1051", "financial_status": "pending", "cancelled": true, "created_at": "2026-11-20T09:30:00Z"}
		],
		"policies": {"shipping": "We ship within 2 working days.", "returns": "Returns within 30 days."}
	}`
	var want any
	if err := json.Unmarshal([]byte(wantData), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("shop data\n got %s\nwant %s", system[i+len(marker):], wantData)
	}
	for _, k := range keys(data) {
		for _, personal := range []string{"email", "mail", "phone", "address", "last_name", "customer_id"} {
			if strings.Contains(k, personal) {
				t.Errorf("shop data has a field %q", k)
			}
		}
	}
	user := body.Messages[1].Content
	if want := "Hi, where is my order #1043? Write to me at [e-mail removed] or call [phone number removed]."; user != want {
		t.Errorf("user message %q, want %q", user, want)
	}
	// Nothing personal anywhere in the bytes, the history included.
	for _, personal := range []string{"ada.lovelace", "example.com", "7700", "900123", "Baker Street", "NW1"} {
		if strings.Contains(string(r.Body), personal) {
			t.Errorf("request body contains %q", personal)
		}
	}
}

func TestAnswerReadsTheModelsJSONAndKeepsOnlyKnownSources(t *testing.T) {
	f := newFakeAPI(t)
	a, err := f.client(t).Answer(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	want := concierge.Answer{
		Text:       "Hi Ada! Your order #1043 has shipped with UPS. You can follow it here: https://www.ups.com/track?tracknum=1Z999AA10123456784",
		Confidence: 0.92,
		// order:#9999, policy:warranty and customer:email are not in the
		// question's data; the duplicate goes too.
		Sources: []string{"order:#1043", "policy:shipping"},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n got %+v\nwant %+v", a, want)
	}
	var rules concierge.Rules
	if escalate, reason := rules.Decide(concierge.Question{Text: "where is my order"}, a); escalate {
		t.Errorf("a confident answer escalates: %s", reason)
	}
}

func TestAnswerOfALowConfidenceIsUnanswered(t *testing.T) {
	f := newFakeAPI(t)
	f.answerContent(t, `{"answer":"Sorry, I don't know; the team will get back to you.","confidence":0.1,"sources":[]}`, "stop")
	a, err := f.client(t).Answer(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	if !a.Unanswered || a.Confidence != 0.1 || a.Escalation != "" {
		t.Errorf("answer %+v, want unanswered with confidence 0.1", a)
	}
	var rules concierge.Rules
	if _, reason := rules.Decide(concierge.Question{Text: "what?"}, a); reason != concierge.ReasonLowConfidence {
		t.Errorf("reason %q, want low_confidence", reason)
	}
}

// A model output that is not the asked-for JSON is an answer with no
// text that escalates, not an error and not a crash.
func TestMalformedModelOutputEscalates(t *testing.T) {
	tests := []struct {
		name    string
		content any
		finish  string
	}{
		{"not JSON", "Your order has shipped!", "stop"},
		{"cut short by the token limit", `{"answer": "Your order #1043 has sh`, "length"},
		{"complete JSON but finish_reason length", `{"answer":"ok","confidence":0.9,"sources":[]}`, "length"},
		{"content filtered", `{"answer":"ok","confidence":0.9,"sources":[]}`, "content_filter"},
		{"no content", nil, "stop"},
		{"an array", `[{"answer":"ok","confidence":0.9}]`, "stop"},
		{"null", `null`, "stop"},
		{"no answer", `{"confidence":0.9,"sources":[]}`, "stop"},
		{"empty answer", `{"answer":"  ","confidence":0.9,"sources":[]}`, "stop"},
		{"no confidence", `{"answer":"It has shipped.","sources":[]}`, "stop"},
		{"confidence as a word", `{"answer":"It has shipped.","confidence":"high","sources":[]}`, "stop"},
		{"confidence above 1", `{"answer":"It has shipped.","confidence":1.5,"sources":[]}`, "stop"},
		{"confidence below 0", `{"answer":"It has shipped.","confidence":-0.1,"sources":[]}`, "stop"},
		{"sources not strings", `{"answer":"It has shipped.","confidence":0.9,"sources":[1,2]}`, "stop"},
		{"trailing data", `{"answer":"It has shipped.","confidence":0.9,"sources":[]} {"answer":"again"}`, "stop"},
		{"answer too long", `{"answer":"` + strings.Repeat("a", openai.MaxAnswerRunes+1) + `","confidence":0.9}`, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.answerContent(t, tt.content, tt.finish)
			a, err := f.client(t).Answer(context.Background(), question())
			if err != nil {
				t.Fatalf("err %v, want an answer that escalates", err)
			}
			want := concierge.Answer{Escalation: concierge.ReasonInvalidOutput, Unanswered: true}
			if !reflect.DeepEqual(a, want) {
				t.Errorf("answer %+v, want %+v", a, want)
			}
			var rules concierge.Rules
			if escalate, reason := rules.Decide(concierge.Question{Text: "where is my order"}, a); !escalate || reason != concierge.ReasonInvalidOutput {
				t.Errorf("Decide = %v, %q; want true, invalid_output", escalate, reason)
			}
		})
	}
}

func TestARefusalEscalates(t *testing.T) {
	f := newFakeAPI(t)
	f.answer(http.StatusOK, nil, []byte(`{"object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",
		"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I cannot help with that."}}]}`))
	a, err := f.client(t).Answer(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	if a.Escalation != concierge.ReasonInvalidOutput || a.Text != "" || a.Confidence != 0 {
		t.Errorf("answer %+v, want an invalid output", a)
	}
}

func TestFailuresAreClassified(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       []byte
		code       string
		retryable  bool
		retryAfter time.Duration
	}{
		{"rate limited", 429, http.Header{"Retry-After": {"20"}}, readTestdata(t, "error_429_rate_limit.json"), concierge.CodeRateLimited, true, 20 * time.Second},
		{"quota exhausted", 429, http.Header{"Retry-After": {"20"}}, readTestdata(t, "error_429_insufficient_quota.json"), concierge.CodeQuotaExhausted, false, 0},
		{"server error", 500, nil, readTestdata(t, "error_500_server.json"), concierge.CodeProviderError, true, 0},
		{"overloaded", 503, http.Header{"Retry-After": {"7"}}, readTestdata(t, "error_503_overloaded.json"), concierge.CodeProviderError, true, 7 * time.Second},
		{"bad gateway, HTML", 502, nil, []byte("<html>Bad gateway</html>"), concierge.CodeProviderError, true, 0},
		{"request timeout", 408, nil, nil, concierge.CodeTimeout, true, 0},
		{"conflict", 409, nil, nil, concierge.CodeProviderError, true, 0},
		{"bad key", 401, nil, readTestdata(t, "error_401_invalid_key.json"), concierge.CodeUnauthorized, false, 0},
		{"forbidden", 403, nil, []byte(`{"error":{"message":"Country not supported","type":"invalid_request_error","code":"unsupported_country_region_territory"}}`), concierge.CodeUnauthorized, false, 0},
		{"rejected request", 400, http.Header{"Retry-After": {"5"}}, readTestdata(t, "error_400_invalid_request.json"), concierge.CodeRejected, false, 0},
		{"unknown model", 404, nil, []byte(`{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`), concierge.CodeRejected, false, 0},
		{"2xx that is not a completion", 200, nil, []byte(`<html>welcome</html>`), concierge.CodeInvalidResponse, false, 0},
		{"2xx without choices", 200, nil, []byte(`{"object":"chat.completion","choices":[]}`), concierge.CodeInvalidResponse, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.answer(tt.status, tt.header, tt.body)
			a, err := f.client(t).Answer(context.Background(), question())
			var pe *concierge.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v (answer %+v), want a *concierge.ProviderError", err, a)
			}
			if pe.Code != tt.code || pe.Retryable != tt.retryable || pe.RetryAfter != tt.retryAfter || pe.Status != tt.status {
				t.Errorf("error %+v, want code %s retryable %v retry after %v status %d", pe, tt.code, tt.retryable, tt.retryAfter, tt.status)
			}
			for _, secret := range []string{apiKey, "sk-test", "Incorrect API key", "ada.lovelace", "where is my order"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains %q", err, secret)
				}
			}
		})
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var hits int
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer elsewhere.Close()
	f := newFakeAPI(t)
	f.answer(http.StatusTemporaryRedirect, http.Header{"Location": {elsewhere.URL + "/v1/chat/completions"}}, nil)
	c, err := openai.New(openai.Config{BaseURL: f.srv.URL + "/v1", APIKey: apiKey, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Answer(context.Background(), question())
	var pe *concierge.ProviderError
	if !errors.As(err, &pe) || pe.Code != concierge.CodeProviderError || pe.Retryable || pe.Status != http.StatusTemporaryRedirect {
		t.Fatalf("err %v, want a final provider_error with status 307", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the redirect was followed: %d requests elsewhere", hits)
	}
}

func TestAResponseTooLargeIsNotRead(t *testing.T) {
	f := newFakeAPI(t)
	f.answerContent(t, `{"answer":"`+strings.Repeat("x", 2<<20)+`","confidence":0.9}`, "stop")
	_, err := f.client(t).Answer(context.Background(), question())
	var pe *concierge.ProviderError
	if !errors.As(err, &pe) || pe.Code != concierge.CodeInvalidResponse || pe.Retryable {
		t.Fatalf("err %v, want a final invalid_response", err)
	}
}

func TestASlowProviderTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: apiKey, Model: model, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Answer(context.Background(), question())
	var pe *concierge.ProviderError
	if !errors.As(err, &pe) || pe.Code != concierge.CodeTimeout || !pe.Retryable {
		t.Fatalf("err %v, want a retryable timeout", err)
	}
}

func TestAnUnreachableProviderIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c, err := openai.New(openai.Config{BaseURL: base, APIKey: apiKey, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Answer(context.Background(), question())
	var pe *concierge.ProviderError
	if !errors.As(err, &pe) || pe.Code != concierge.CodeConnectFailed || !pe.Retryable {
		t.Fatalf("err %v, want a retryable connect_failed", err)
	}
}

func TestAnswerHonoursTheCallersContext(t *testing.T) {
	f := newFakeAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client(t).Answer(ctx, question())
	var pe *concierge.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want a ProviderError wrapping context.Canceled", err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	_, err := openai.New(openai.Config{BaseURL: "ftp://x?y", APIKey: "sk bad\n", Timeout: -1})
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"base URL", "API key", "model", "timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "sk bad") {
		t.Errorf("error %q shows the key", err)
	}
	if _, err := openai.New(openai.Config{BaseURL: "https://api.openai.com/v1", APIKey: apiKey, Model: model}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"where is my order #1043":                       "where is my order #1043",
		"mail me: Ada.L+shop@mail.example.co.uk thanks": "mail me: [e-mail removed] thanks",
		"call 020 7946 0958 or +1 (650) 555-1234":       "call [phone number removed] or [phone number removed]",
		"my number is 0033612345678":                    "my number is [phone number removed]",
		"tracking 1Z999AA10123456784":                   "tracking 1Z999AA10123456784",
		"order 1043, 2 items, 150 EUR":                  "order 1043, 2 items, 150 EUR",
	} {
		if got := openai.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseContent(f *testing.F) {
	for _, s := range []string{
		`{"answer":"ok","confidence":0.9,"sources":["order:#1043"]}`, `{"answer":"ok","confidence":1e309}`,
		`{"answer":"ok","confidence":-0}`, `{"answer":null}`, `[]`, `{`, "", `{"answer":"\ud800","confidence":0.5}`,
	} {
		f.Add(s)
	}
	q := question()
	known := q.KnownSources()
	f.Fuzz(func(t *testing.T, content string) {
		a := openai.ParseContent(content, q)
		if math.IsNaN(a.Confidence) || a.Confidence < 0 || a.Confidence > 1 {
			t.Fatalf("confidence %v out of [0, 1]", a.Confidence)
		}
		if (a.Text == "") != (a.Escalation == concierge.ReasonInvalidOutput) {
			t.Fatalf("answer %+v: no text must mean an invalid output", a)
		}
		for _, s := range a.Sources {
			if !slices.Contains(known, s) {
				t.Fatalf("source %q not in the question's data", s)
			}
		}
	})
}
