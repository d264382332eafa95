package sms_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/sms"
)

const (
	apiKey    = "sk_test_NOTREAL0123456789abcdef"
	sender    = "Boutique"
	recipient = "+16505551234"
	text      = "Your order #1001 has shipped: https://shop.example/t/1001"
)

// received is one request the fake provider took.
type received struct {
	Method, Path, Authorization, ContentType string
	Body                                     []byte
}

// fakeProvider serves the contract of POST /v1/messages: it records each
// request and answers with the status, headers and body it was given.
type fakeProvider struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []received
	status   int
	header   http.Header
	body     []byte
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	f := &fakeProvider{status: http.StatusCreated, body: readTestdata(t, "success_queued.json")}
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

func (f *fakeProvider) answer(status int, header http.Header, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.header, f.body = status, header, body
}

func (f *fakeProvider) taken() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.requests...)
}

func (f *fakeProvider) client(t *testing.T) *sms.Client {
	t.Helper()
	c, err := sms.New(sms.Config{BaseURL: f.srv.URL + "/", APIKey: apiKey, From: sender, HTTP: f.srv.Client()})
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

// assertJSON compares a request body with the expected document exactly.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("request body\n got %s\nwant %s", got, want)
	}
}

func assertOneRequest(t *testing.T, f *fakeProvider) received {
	t.Helper()
	reqs := f.taken()
	if len(reqs) != 1 {
		t.Fatalf("the provider got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost {
		t.Errorf("method %s, want POST", r.Method)
	}
	if r.Path != sms.MessagesPath {
		t.Errorf("path %s, want %s", r.Path, sms.MessagesPath)
	}
	if want := "Bearer " + apiKey; r.Authorization != want {
		t.Errorf("Authorization %q, want %q", r.Authorization, want)
	}
	if r.ContentType != "application/json" {
		t.Errorf("Content-Type %q, want application/json", r.ContentType)
	}
	return r
}

func TestSendPostsTheContractBodyAndReturnsTheMessageID(t *testing.T) {
	f := newFakeProvider(t)
	sent, err := f.client(t).Send(context.Background(), sms.Message{
		To: "16505551234", Text: text + " <fast> & free",
		CallbackURL:     "https://cgp.example/webhooks/providers/sms?token=cpt_abc",
		ClientReference: "msg_01HZX",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := sms.Sent{MessageID: "SM7f3c2a9e4b1d4c6a8e0f", Status: "queued", Segments: 1}
	if sent != want {
		t.Errorf("sent %+v, want %+v", sent, want)
	}
	assertJSON(t, assertOneRequest(t, f).Body, `{
		"to": "+16505551234", "from": "Boutique",
		"text": "Your order #1001 has shipped: https://shop.example/t/1001 <fast> & free",
		"callback_url": "https://cgp.example/webhooks/providers/sms?token=cpt_abc",
		"client_reference": "msg_01HZX"
	}`)
	if b := assertOneRequest(t, f).Body; strings.Contains(string(b), `\u003c`) {
		t.Errorf("the text was HTML-escaped: %s", b)
	}
}

func TestSendWithoutOptionalFieldsOmitsThem(t *testing.T) {
	f := newFakeProvider(t)
	c, err := sms.New(sms.Config{BaseURL: f.srv.URL, APIKey: apiKey, From: "+14155550100"})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := c.Send(context.Background(), sms.Message{To: recipient, Text: strings.Repeat("é", 161)})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Segments != 2 {
		t.Errorf("segments %d, want 2", sent.Segments)
	}
	assertJSON(t, assertOneRequest(t, f).Body, `{"to": "+16505551234", "from": "+14155550100", "text": "`+strings.Repeat("é", 161)+`"}`)
}

// assertSendError checks the classification and that the error shows
// neither the key, the recipient, the text nor the provider's text.
func assertSendError(t *testing.T, err error, code string, retry bool, status int, retryAfter time.Duration, secret ...string) *channels.SendError {
	t.Helper()
	var se *channels.SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *channels.SendError", err, err)
	}
	if se.Code != code || se.Retryable != retry || se.Status != status || se.RetryAfter != retryAfter {
		t.Errorf("got code %q retryable %v status %d retry-after %v, want %q %v %d %v",
			se.Code, se.Retryable, se.Status, se.RetryAfter, code, retry, status, retryAfter)
	}
	if c := channels.Classify(err); c != se {
		t.Errorf("Classify returned another error than the chain's")
	}
	for _, s := range append(secret, apiKey, "6505551234", text) {
		if strings.Contains(se.Error(), s) || strings.Contains(se.Code, s) {
			t.Errorf("error %q reveals %q", se.Error(), s)
		}
	}
	return se
}

func TestContractErrorPayloadsAreClassified(t *testing.T) {
	cases := []struct {
		file       string
		status     int
		retryAfter string
		code       string
		retry      bool
		wantAfter  time.Duration
	}{
		{"error_400_invalid_request.json", 400, "", "invalid_request", false, 0},
		{"error_401_unauthorized.json", 401, "", "unauthorized", false, 0},
		{"error_403_sender_not_allowed.json", 403, "", "sender_not_allowed", false, 0},
		{"error_422_invalid_number.json", 422, "", "invalid_number", false, 0},
		{"error_429_rate_limited.json", 429, "30", "rate_limited", true, 30 * time.Second},
		{"error_500_internal_error.json", 500, "", "internal_error", true, 0},
		{"error_503_unavailable.json", 503, "5", "unavailable", true, 5 * time.Second},
	}
	f := newFakeProvider(t)
	c := f.client(t)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			payload := readTestdata(t, tc.file)
			var doc struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(payload, &doc); err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			f.answer(tc.status, h, payload)
			_, err := c.Send(context.Background(), sms.Message{To: recipient, Text: text})
			assertSendError(t, err, tc.code, tc.retry, tc.status, tc.wantAfter, doc.Error.Message)
		})
	}
}

func TestAnswersOutsideTheContractAreClassifiedByStatus(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		code       string
		retry      bool
		wantAfter  time.Duration
	}{
		{"html 502 from a proxy", 502, "", "<html><body>Bad Gateway</body></html>", channels.CodeProviderError, true, 0},
		{"503 with an HTTP-date hint", 503, now.Add(90 * time.Second).Format(http.TimeFormat), "", channels.CodeProviderError, true, 90 * time.Second},
		{"429 in plain text", 429, "7", "slow down", channels.CodeRateLimited, true, 7 * time.Second},
		{"429 with a hint past a day", 429, "999999", "", channels.CodeRateLimited, true, 24 * time.Hour},
		{"408", 408, "", "", channels.CodeTimeout, true, 0},
		{"401 empty", 401, "", "", channels.CodeUnauthorized, false, 0},
		{"404 html", 404, "", "<h1>not found</h1>", channels.CodeRejected, false, 0},
		{"error code that is free text", 422, "", `{"error":{"code":"to +16505551234 is bad","message":"x"}}`, channels.CodeRejected, false, 0},
		{"error code that is not a string", 400, "", `{"error":{"code":17}}`, channels.CodeRejected, false, 0},
		{"a redirect is not followed", 302, "", "", channels.CodeProviderError, false, 0},
		{"201 without a message id", 201, "", `{"status":"queued"}`, channels.CodeProviderError, false, 0},
		{"201 that is not JSON", 201, "", "OK", channels.CodeProviderError, false, 0},
		{"201 carrying an error", 201, "", `{"message_id":"SM1","error":{"code":"x"}}`, channels.CodeProviderError, false, 0},
		{"201 with a message id holding a space", 201, "", `{"message_id":"SM 1"}`, channels.CodeProviderError, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeProvider(t)
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			if tc.status == 302 {
				h.Set("Location", "/elsewhere")
			}
			f.answer(tc.status, h, []byte(tc.body))
			c, err := sms.New(sms.Config{BaseURL: f.srv.URL, APIKey: apiKey, From: sender, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Send(context.Background(), sms.Message{To: recipient, Text: text})
			assertSendError(t, err, tc.code, tc.retry, tc.status, tc.wantAfter)
			if n := len(f.taken()); n != 1 {
				t.Errorf("the provider got %d requests, want 1", n)
			}
		})
	}
}

func TestAStatusThatIsNotASafeTokenIsDropped(t *testing.T) {
	f := newFakeProvider(t)
	f.answer(http.StatusCreated, nil, []byte(`{"message_id":"SM1","status":"queued for +16505551234"}`))
	sent, err := f.client(t).Send(context.Background(), sms.Message{To: recipient, Text: text})
	if err != nil || sent.MessageID != "SM1" || sent.Status != "" {
		t.Fatalf("sent %+v, %v", sent, err)
	}
}

func TestInvalidMessagesAreRefusedWithoutCallingTheProvider(t *testing.T) {
	cases := []struct {
		name  string
		msg   sms.Message
		field string
	}{
		{"recipient with letters", sms.Message{To: "+1650555ABCD", Text: text}, "to"},
		{"recipient too long", sms.Message{To: "+1234567890123456", Text: text}, "to"},
		{"recipient too short", sms.Message{To: "+123456", Text: text}, "to"},
		{"recipient with a leading zero", sms.Message{To: "06505551234", Text: text}, "to"},
		{"recipient with spaces", sms.Message{To: "+1 650 555 1234", Text: text}, "to"},
		{"recipient with two pluses", sms.Message{To: "++16505551234", Text: text}, "to"},
		{"empty recipient", sms.Message{Text: text}, "to"},
		{"blank text", sms.Message{To: recipient, Text: " \n "}, "text"},
		{"invalid UTF-8", sms.Message{To: recipient, Text: "caf\xe9"}, "text"},
		{"eleven GSM-7 segments", sms.Message{To: recipient, Text: strings.Repeat("a", 10*153+1)}, "text"},
		{"eleven UCS-2 segments", sms.Message{To: recipient, Text: strings.Repeat("ж", 10*67+1)}, "text"},
		{"callback that is not a URL", sms.Message{To: recipient, Text: text, CallbackURL: "/webhooks/providers/sms"}, "callback_url"},
		{"callback over ftp", sms.Message{To: recipient, Text: text, CallbackURL: "ftp://cgp.example/x"}, "callback_url"},
		{"callback with a line break", sms.Message{To: recipient, Text: text, CallbackURL: "https://cgp.example/x\r\n"}, "callback_url"},
		{"reference with a space", sms.Message{To: recipient, Text: text, ClientReference: "msg 1"}, "client_reference"},
		{"reference too long", sms.Message{To: recipient, Text: text, ClientReference: strings.Repeat("m", 129)}, "client_reference"},
	}
	f := newFakeProvider(t)
	c := f.client(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Send(context.Background(), tc.msg)
			se := assertSendError(t, err, channels.CodeInvalidRequest, false, 0, 0)
			var fe *sms.FieldError
			if !errors.As(se, &fe) || fe.Field != tc.field {
				t.Errorf("cause %v does not name the field %q", se.Unwrap(), tc.field)
			}
		})
	}
	if n := len(f.taken()); n != 0 {
		t.Errorf("the provider got %d requests, want none", n)
	}
	// Ten segments is the limit, and allowed.
	for _, s := range []string{strings.Repeat("a", 10*153), strings.Repeat("ж", 10*67)} {
		if sent, err := c.Send(context.Background(), sms.Message{To: recipient, Text: s}); err != nil || sent.Segments != 10 {
			t.Errorf("a ten-segment text: %+v, %v", sent, err)
		}
	}
}

func TestAHangingProviderIsARetryableTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := sms.New(sms.Config{BaseURL: srv.URL, APIKey: apiKey, From: sender, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), sms.Message{To: recipient, Text: text})
	assertSendError(t, err, channels.CodeTimeout, true, 0, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestACancelledContextIsARetryableTimeout(t *testing.T) {
	f := newFakeProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client(t).Send(ctx, sms.Message{To: recipient, Text: text})
	assertSendError(t, err, channels.CodeTimeout, true, 0, 0)
}

func TestAnUnreachableProviderIsARetryableConnectFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c, err := sms.New(sms.Config{BaseURL: base, APIKey: apiKey, From: sender})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), sms.Message{To: recipient, Text: text})
	assertSendError(t, err, channels.CodeConnectFailed, true, 0, 0)
}

func TestConfigIsValidated(t *testing.T) {
	ok := sms.Config{BaseURL: "https://sms.example", APIKey: apiKey, From: sender}
	with := func(edit func(*sms.Config)) sms.Config { c := ok; edit(&c); return c }
	cases := map[string]sms.Config{
		"no base URL":          with(func(c *sms.Config) { c.BaseURL = "" }),
		"relative base URL":    with(func(c *sms.Config) { c.BaseURL = "sms.example/v1" }),
		"ftp base URL":         with(func(c *sms.Config) { c.BaseURL = "ftp://sms.example" }),
		"base URL with query":  with(func(c *sms.Config) { c.BaseURL = "https://sms.example?x=1" }),
		"base URL with user":   with(func(c *sms.Config) { c.BaseURL = "https://u:p@sms.example" }),
		"no key":               with(func(c *sms.Config) { c.APIKey = "" }),
		"key with a newline":   with(func(c *sms.Config) { c.APIKey = apiKey + "\r\nX-Injected: 1" }),
		"no sender":            with(func(c *sms.Config) { c.From = "" }),
		"sender of 12 letters": with(func(c *sms.Config) { c.From = "BoutiqueElis" }),
		"sender all digits":    with(func(c *sms.Config) { c.From = "12345" }),
		"sender with a dash":   with(func(c *sms.Config) { c.From = "Bou-tique" }),
		"sender bad E.164":     with(func(c *sms.Config) { c.From = "+0123" }),
		"negative timeout":     with(func(c *sms.Config) { c.Timeout = -time.Second }),
	}
	for name, cfg := range cases {
		_, err := sms.New(cfg)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), apiKey) {
			t.Errorf("%s: error reveals the key: %v", name, err)
		}
	}
	for _, from := range []string{"Boutique", "Shop 24", "A", "+14155550100", "BoutiqueEli"} {
		if _, err := sms.New(with(func(c *sms.Config) { c.From = from })); err != nil {
			t.Errorf("sender %q refused: %v", from, err)
		}
	}
	if err := (sms.Config{}).Validate(); err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("an empty config should report every problem at once, got %v", err)
	}
}

func TestNormalizeE164(t *testing.T) {
	for in, want := range map[string]string{"+16505551234": "+16505551234", "16505551234": "+16505551234", "+4915123456789": "+4915123456789"} {
		if got, err := sms.NormalizeE164(in); err != nil || got != want {
			t.Errorf("NormalizeE164(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// FuzzParseResponse: whatever the status and the bytes, the parser never
// panics and returns either a Sent with an id or a SendError whose code is
// a safe token, retryable exactly for 408, 429 and 5xx.
func FuzzParseResponse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b := readTestdata(f, e.Name())
		f.Add(201, "", b)
		f.Add(429, "30", b)
	}
	f.Add(503, "Fri, 27 Nov 2026 12:01:30 GMT", []byte("<html>"))
	f.Add(201, "", []byte(`{"message_id":"SM1","error":null}`))
	f.Add(400, "-5", []byte(`{"error":{"code":"Invalid Number"}}`))
	f.Add(429, "99999999999", []byte(`{"error":"x"}`))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		sent, err := sms.ParseResponse(status, h, body, now)
		if err == nil {
			if sent.MessageID == "" || status < 200 || status > 299 {
				t.Fatalf("no error for %d %q: %+v", status, body, sent)
			}
			if strings.Trim(sent.Status, "abcdefghijklmnopqrstuvwxyz0123456789_.") != "" {
				t.Fatalf("unsafe status %q", sent.Status)
			}
			return
		}
		var se *channels.SendError
		if !errors.As(err, &se) {
			t.Fatalf("error %T is not a SendError", err)
		}
		if sent != (sms.Sent{}) {
			t.Fatalf("an error came with a Sent %+v", sent)
		}
		if se.Code == "" || len(se.Code) > 64 || strings.Trim(se.Code, "abcdefghijklmnopqrstuvwxyz0123456789_.") != "" {
			t.Fatalf("unsafe code %q", se.Code)
		}
		if want := status == 408 || status == 429 || status >= 500; se.Retryable != want {
			t.Fatalf("status %d: retryable %v", status, se.Retryable)
		}
		if se.RetryAfter < 0 || se.RetryAfter > 24*time.Hour {
			t.Fatalf("retry-after %v out of range", se.RetryAfter)
		}
	})
}
