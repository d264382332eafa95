package whatsapp_test

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
	"github.com/cgp-platform/cgp/channels/whatsapp"
)

const (
	phoneID   = "106540352242922"
	token     = "EAAGtestTOKENnotReal0123456789"
	recipient = "+16505551234"
	msisdn    = "16505551234"
)

// received is one request the fake Cloud API took.
type received struct {
	Method, Path, Authorization, ContentType string
	Body                                     []byte
}

// fakeAPI serves the documented contract of POST /{phone-number-id}/messages:
// it records each request and answers with the status, headers and body
// it was given.
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
	f := &fakeAPI{status: http.StatusOK, body: readTestdata(t, "success_template.json")}
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

func (f *fakeAPI) taken() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.requests...)
}

func (f *fakeAPI) client(t *testing.T) *whatsapp.Client {
	t.Helper()
	c, err := whatsapp.New(whatsapp.Config{BaseURL: f.srv.URL + "/v26.0", HTTP: f.srv.Client()})
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

// assertJSON compares a request body with the expected document exactly:
// same fields, same values, nothing more.
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
	if want := "/v26.0/" + phoneID + "/messages"; r.Path != want {
		t.Errorf("path %s, want %s", r.Path, want)
	}
	if want := "Bearer " + token; r.Authorization != want {
		t.Errorf("Authorization %q, want %q", r.Authorization, want)
	}
	if r.ContentType != "application/json" {
		t.Errorf("Content-Type %q, want application/json", r.ContentType)
	}
	return r
}

func TestSendTemplatePostsTheDocumentedBodyAndReturnsTheMessageID(t *testing.T) {
	f := newFakeAPI(t)
	sent, err := f.client(t).SendTemplate(context.Background(), phoneID, token, recipient, whatsapp.Template{
		Name:     "order_shipped",
		Language: "en_US",
		Header:   []string{"Order #1001"},
		Body:     []string{"Ada", "https://shop.example/track?o=1001&k=x"},
		Buttons: []whatsapp.Button{
			{Index: 0, SubType: whatsapp.ButtonURL, Param: "1001?k=x"},
			{Index: 1, SubType: whatsapp.ButtonQuickReply, Param: "STOP"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := whatsapp.Sent{
		MessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA",
		WAID:      msisdn,
		Status:    "accepted",
	}
	if sent != want {
		t.Errorf("sent %+v, want %+v", sent, want)
	}
	r := assertOneRequest(t, f)
	assertJSON(t, r.Body, `{
		"messaging_product": "whatsapp",
		"recipient_type": "individual",
		"to": "16505551234",
		"type": "template",
		"template": {
			"name": "order_shipped",
			"language": {"code": "en_US"},
			"components": [
				{"type": "header", "parameters": [{"type": "text", "text": "Order #1001"}]},
				{"type": "body", "parameters": [
					{"type": "text", "text": "Ada"},
					{"type": "text", "text": "https://shop.example/track?o=1001&k=x"}
				]},
				{"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "1001?k=x"}]},
				{"type": "button", "sub_type": "quick_reply", "index": "1", "parameters": [{"type": "payload", "payload": "STOP"}]}
			]
		}
	}`)
}

func TestSendTemplateWithoutVariablesHasNoComponents(t *testing.T) {
	f := newFakeAPI(t)
	if _, err := f.client(t).SendTemplate(context.Background(), phoneID, token, msisdn,
		whatsapp.Template{Name: "hello_world", Language: "en_US"}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, assertOneRequest(t, f).Body, `{
		"messaging_product": "whatsapp", "recipient_type": "individual", "to": "16505551234",
		"type": "template", "template": {"name": "hello_world", "language": {"code": "en_US"}}
	}`)
}

func TestSendTextPostsTheDocumentedBody(t *testing.T) {
	f := newFakeAPI(t)
	f.answer(http.StatusOK, nil, readTestdata(t, "success_text.json"))
	body := "Your order shipped: https://shop.example/t/1001 <fast> & free"
	sent, err := f.client(t).SendText(context.Background(), phoneID, token, recipient, body, true)
	if err != nil {
		t.Fatal(err)
	}
	want := whatsapp.Sent{MessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJGRkQ2QkYzRTM0NDU0RjRGNjcA", WAID: msisdn}
	if sent != want {
		t.Errorf("sent %+v, want %+v", sent, want)
	}
	assertJSON(t, assertOneRequest(t, f).Body, `{
		"messaging_product": "whatsapp", "recipient_type": "individual", "to": "16505551234",
		"type": "text", "text": {"body": "Your order shipped: https://shop.example/t/1001 <fast> & free", "preview_url": true}
	}`)
}

func TestSendTextMessageCarriesItsCallbackData(t *testing.T) {
	f := newFakeAPI(t)
	f.answer(http.StatusOK, nil, readTestdata(t, "success_text.json"))
	if _, err := f.client(t).SendTextMessage(context.Background(), phoneID, token, recipient,
		whatsapp.Text{Body: "It left today", CallbackData: "msg_123"}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, assertOneRequest(t, f).Body, `{
		"messaging_product": "whatsapp", "recipient_type": "individual", "to": "16505551234",
		"type": "text", "text": {"body": "It left today", "preview_url": false}, "biz_opaque_callback_data": "msg_123"
	}`)
	if _, err := f.client(t).SendTextMessage(context.Background(), phoneID, token, recipient,
		whatsapp.Text{Body: "x", CallbackData: strings.Repeat("c", whatsapp.MaxCallbackData+1)}); err == nil {
		t.Fatal("a callback data over the bound was sent")
	}
}

// assertSendError checks the classification and that the error shows
// neither the token, the recipient nor the provider's text.
func assertSendError(t *testing.T, err error, code string, retry bool, status int, retryAfter time.Duration, secret ...string) {
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
	for _, s := range append(secret, token, msisdn) {
		if strings.Contains(se.Error(), s) || strings.Contains(se.Code, s) {
			t.Errorf("error %q reveals %q", se.Error(), s)
		}
	}
}

func TestDocumentedErrorPayloadsAreClassified(t *testing.T) {
	cases := []struct {
		file       string
		status     int
		retryAfter string
		code       string
		retry      bool
		wantAfter  time.Duration
	}{
		// Credentials and permissions: never retried.
		{"error_190_token_expired.json", 401, "", "190", false, 0},
		// The request or the recipient: never retried.
		{"error_100_invalid_parameter.json", 400, "", "100", false, 0},
		{"error_131026_undeliverable.json", 400, "", "131026", false, 0},
		{"error_131047_reengagement.json", 400, "", "131047", false, 0},
		{"error_131051_unsupported_type.json", 400, "", "131051", false, 0},
		{"error_133010_not_registered.json", 400, "", "133010", false, 0},
		{"error_368_policy.json", 403, "", "368", false, 0},
		// Templates: never retried.
		{"error_132000_param_count.json", 400, "", "132000", false, 0},
		{"error_132001_template_missing.json", 404, "", "132001", false, 0},
		{"error_132015_template_paused.json", 400, "", "132015", false, 0},
		// Rate limits: retried, after the hint when there is one.
		{"error_130429_rate_limit.json", 429, "30", "130429", true, 30 * time.Second},
		{"error_131056_pair_rate_limit.json", 400, "", "131056", true, 0},
		{"error_131048_spam_rate_limit.json", 400, "", "131048", true, 0},
		{"error_80007_waba_rate_limit.json", 400, "120", "80007", true, 2 * time.Minute},
		{"error_4_app_rate_limit.json", 400, "", "4", true, 0},
		// The provider's own trouble: retried.
		{"error_131000_something_went_wrong.json", 500, "", "131000", true, 0},
		{"error_131016_service_unavailable.json", 503, "5", "131016", true, 5 * time.Second},
	}
	f := newFakeAPI(t)
	c := f.client(t)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			payload := readTestdata(t, tc.file)
			var doc struct {
				Error struct {
					Message   string `json:"message"`
					ErrorData struct {
						Details string `json:"details"`
					} `json:"error_data"`
					FBTrace string `json:"fbtrace_id"`
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
			_, err := c.SendTemplate(context.Background(), phoneID, token, recipient,
				whatsapp.Template{Name: "order_shipped", Language: "en_US", Body: []string{"Ada"}})
			assertSendError(t, err, tc.code, tc.retry, tc.status, tc.wantAfter,
				doc.Error.Message, doc.Error.ErrorData.Details, doc.Error.FBTrace)
		})
	}
}

func TestAnswersWithoutAGraphErrorAreClassifiedByStatus(t *testing.T) {
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
		{"401 empty", 401, "", "", channels.CodeUnauthorized, false, 0},
		{"404 html", 404, "", "<h1>not found</h1>", channels.CodeRejected, false, 0},
		{"error object without a code", 400, "", `{"error":{"message":"to 16505551234 is bad"}}`, channels.CodeRejected, false, 0},
		{"a redirect is not followed", 302, "", "", channels.CodeProviderError, false, 0},
		{"200 without a message id", 200, "", `{"messaging_product":"whatsapp","messages":[]}`, channels.CodeProviderError, false, 0},
		{"200 that is not JSON", 200, "", "OK", channels.CodeProviderError, false, 0},
		{"200 carrying an error", 200, "", `{"error":{"code":131000}}`, channels.CodeProviderError, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			if tc.status == 302 {
				h.Set("Location", "/elsewhere")
			}
			f.answer(tc.status, h, []byte(tc.body))
			c, err := whatsapp.New(whatsapp.Config{BaseURL: f.srv.URL + "/v26.0", Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SendText(context.Background(), phoneID, token, recipient, "hello", false)
			assertSendError(t, err, tc.code, tc.retry, tc.status, tc.wantAfter)
			if n := len(f.taken()); n != 1 {
				t.Errorf("the API got %d requests, want 1", n)
			}
		})
	}
}

func TestInvalidRequestsAreRefusedWithoutCallingTheAPI(t *testing.T) {
	ok := whatsapp.Template{Name: "order_shipped", Language: "en_US"}
	with := func(edit func(*whatsapp.Template)) whatsapp.Template {
		t := ok
		edit(&t)
		return t
	}
	cases := []struct {
		name        string
		phoneID     string
		token       string
		to          string
		template    *whatsapp.Template
		text        string
		wantMessage string
	}{
		{"empty template name", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) { t.Name = " " })), "", "template name"},
		{"empty language", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) { t.Language = "" })), "", "template language"},
		{"recipient with letters", phoneID, token, "+1650555ABCD", &ok, "", "recipient"},
		{"recipient too long", phoneID, token, "+1234567890123456", &ok, "", "recipient"},
		{"recipient with a leading zero", phoneID, token, "06505551234", &ok, "", "recipient"},
		{"recipient with spaces", phoneID, token, "+1 650 555 1234", &ok, "", "recipient"},
		{"phone number id with a path", "123/../456", token, recipient, &ok, "", "phone number id"},
		{"empty token", phoneID, "", recipient, &ok, "", "access token"},
		{"token with a line break", phoneID, token + "\r\nX-Injected: 1", recipient, &ok, "", "access token"},
		{"token with a space", phoneID, "Bearer " + token, recipient, &ok, "", "access token"},
		{"two header variables", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) { t.Header = []string{"a", "b"} })), "", "header"},
		{"empty body variable", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) { t.Body = []string{"Ada", ""} })), "", "body variable 2"},
		{"button index 10", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) {
			t.Buttons = []whatsapp.Button{{Index: 10, SubType: whatsapp.ButtonURL, Param: "x"}}
		})), "", "button index"},
		{"unknown button sub-type", phoneID, token, recipient, ptr(with(func(t *whatsapp.Template) {
			t.Buttons = []whatsapp.Button{{Index: 0, SubType: "phone_number", Param: "x"}}
		})), "", "sub-type"},
		{"empty text", phoneID, token, recipient, nil, "  ", "body is empty"},
		{"text over 4096 characters", phoneID, token, recipient, nil, strings.Repeat("é", 4097), "4097 characters"},
	}
	f := newFakeAPI(t)
	c := f.client(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.template != nil {
				_, err = c.SendTemplate(context.Background(), tc.phoneID, tc.token, tc.to, *tc.template)
			} else {
				_, err = c.SendText(context.Background(), tc.phoneID, tc.token, tc.to, tc.text, false)
			}
			assertSendError(t, err, channels.CodeInvalidRequest, false, 0, 0)
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("error %q does not name %q", err, tc.wantMessage)
			}
		})
	}
	if n := len(f.taken()); n != 0 {
		t.Errorf("the API got %d requests, want none", n)
	}
	// 4096 characters is the documented maximum, and allowed.
	if _, err := c.SendText(context.Background(), phoneID, token, recipient, strings.Repeat("é", 4096), false); err != nil {
		t.Errorf("a 4096-character text was refused: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAHangingAPIIsARetryableTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client hanging up;
		// then it answers only when the client gives up (or the test ends).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := whatsapp.New(whatsapp.Config{BaseURL: srv.URL, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendText(context.Background(), phoneID, token, recipient, "hello", false)
	assertSendError(t, err, channels.CodeTimeout, true, 0, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestAnUnreachableAPIIsARetryableConnectFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more
	c, err := whatsapp.New(whatsapp.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendText(context.Background(), phoneID, token, recipient, "hello", false)
	assertSendError(t, err, channels.CodeConnectFailed, true, 0, 0)
}

func TestConfigIsValidated(t *testing.T) {
	for _, base := range []string{"graph.facebook.com/v26.0", "ftp://graph.facebook.com", "https://graph.facebook.com/v26.0?x=1", "https:///v26.0"} {
		if _, err := whatsapp.New(whatsapp.Config{BaseURL: base}); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
	if _, err := whatsapp.New(whatsapp.Config{Timeout: -time.Second}); err == nil {
		t.Error("negative timeout accepted")
	}
	if _, err := whatsapp.New(whatsapp.Config{}); err != nil {
		t.Errorf("the defaults were refused: %v", err)
	}
}

// FuzzParseResponse: whatever the status and the bytes, the parser never
// panics and returns either a Sent with an id or a SendError whose code is
// a safe token.
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
		f.Add(200, "", b)
		f.Add(400, "30", b)
	}
	f.Add(503, "Fri, 27 Nov 2026 12:01:30 GMT", []byte("<html>"))
	f.Add(200, "", []byte(`{"messages":[{"id":"wamid.x"}],"error":null}`))
	f.Add(400, "-5", []byte(`{"error":{"code":"131056","error_subcode":1.5,"type":"x y"}}`))
	f.Add(429, "99999999999", []byte(`{"error":{"code":-1}}`))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		sent, err := whatsapp.ParseResponse(status, h, body, now)
		if err == nil {
			if sent.MessageID == "" {
				t.Fatalf("no error and no message id for %d %q", status, body)
			}
			return
		}
		var se *channels.SendError
		if !errors.As(err, &se) {
			t.Fatalf("error %T is not a SendError", err)
		}
		if sent != (whatsapp.Sent{}) {
			t.Fatalf("an error came with a Sent %+v", sent)
		}
		if se.Code == "" || strings.Trim(se.Code, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Fatalf("unsafe code %q", se.Code)
		}
		if se.RetryAfter < 0 || se.RetryAfter > 24*time.Hour {
			t.Fatalf("retry-after %v out of range", se.RetryAfter)
		}
	})
}
