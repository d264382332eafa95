package app_test

import (
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/channels/whatsapp"
)

// validConfig is a configuration Validate accepts.
func validConfig() app.Config {
	return app.Config{DataDir: "data", LogLevel: "info", EventLog: "sqlite", Vault: "sqlite", DIDailyAt: "02:00"}
}

func TestConfigValidateWhatsAppAPIURL(t *testing.T) {
	for _, c := range []struct {
		url          string
		allowPrivate bool
		ok           bool
	}{
		{"", false, true},
		{whatsapp.DefaultBaseURL, false, true},
		{"https://graph.example.com/v26.0/", false, true},
		{"https://127.0.0.1:8443", false, true},
		{"http://127.0.0.1:8080/v26.0", true, true},
		{"http://127.0.0.1:8080/v26.0", false, false},
		{"graph.facebook.com/v26.0", false, false},
		{"/v26.0", false, false},
		{"https://", false, false},
		{"ftp://graph.facebook.com/v26.0", true, false},
		{"https:graph.facebook.com", false, false},
		{"https://graph.facebook.com/v26.0?access_token=EAAG", false, false},
		{"https://graph.facebook.com/v26.0?", false, false},
		{"https://graph.facebook.com/v26.0#messages", false, false},
		{"https://graph.facebook.com/v26.0#", false, false},
		{"https://user:pass@graph.facebook.com/v26.0", false, false},
		{"https://graph.facebook.com/v26.0 ", false, false},
		{"https://graph.facebook.com:bad/v26.0", false, false},
	} {
		cfg := validConfig()
		cfg.WhatsAppAPIURL, cfg.OutboundAllowPrivate = c.url, c.allowPrivate
		err := cfg.Validate()
		if c.ok != (err == nil) {
			t.Errorf("%q (allow private %v): %v, want ok %v", c.url, c.allowPrivate, err, c.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "whatsapp-api-url") || strings.Contains(err.Error(), "pass")) {
			t.Errorf("%q: error %q does not name the flag, or echoes the value", c.url, err)
		}
	}
	cfg := validConfig()
	if cfg.WhatsAppBaseURL() != whatsapp.DefaultBaseURL {
		t.Errorf("default base URL %q", cfg.WhatsAppBaseURL())
	}
	cfg.WhatsAppAPIURL = "https://graph.example.com/v1"
	if cfg.WhatsAppBaseURL() != "https://graph.example.com/v1" {
		t.Errorf("base URL %q", cfg.WhatsAppBaseURL())
	}
}

func TestConfigValidateSMS(t *testing.T) {
	const key = "sk_live_NOTREAL0123456789"
	for _, c := range []struct {
		name               string
		url, apiKey, from  string
		allowPrivate       bool
		ok                 bool
		wantFlag, notFlags string
	}{
		{name: "none", ok: true},
		{name: "all three", url: "https://sms.example", apiKey: key, from: "Boutique", ok: true},
		{name: "E.164 sender", url: "https://sms.example/", apiKey: key, from: "+14155550100", ok: true},
		{name: "http with allow private", url: "http://127.0.0.1:8080", apiKey: key, from: "Boutique", allowPrivate: true, ok: true},
		{name: "http", url: "http://sms.example", apiKey: key, from: "Boutique", wantFlag: "sms-api-url"},
		{name: "key without url", apiKey: key, wantFlag: "sms-api-url"},
		{name: "from without url", from: "Boutique", wantFlag: "sms-api-url"},
		{name: "url without key", url: "https://sms.example", from: "Boutique", wantFlag: "sms-api-key"},
		{name: "url without from", url: "https://sms.example", apiKey: key, wantFlag: "sms-from"},
		{name: "key with a space", url: "https://sms.example", apiKey: "Bearer " + key, from: "Boutique", wantFlag: "sms-api-key"},
		{name: "sender too long", url: "https://sms.example", apiKey: key, from: "BoutiqueElise", wantFlag: "sms-from"},
		{name: "url with the key in its query", url: "https://sms.example?key=" + key, apiKey: key, from: "Boutique", wantFlag: "sms-api-url"},
		{name: "url with user info", url: "https://" + key + "@sms.example", apiKey: key, from: "Boutique", wantFlag: "sms-api-url"},
	} {
		cfg := validConfig()
		cfg.SMSAPIURL, cfg.SMSAPIKey, cfg.SMSFrom, cfg.OutboundAllowPrivate = c.url, c.apiKey, c.from, c.allowPrivate
		err := cfg.Validate()
		if c.ok != (err == nil) {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), c.wantFlag) || strings.Contains(err.Error(), key)) {
			t.Errorf("%s: error %q does not name %s, or echoes the key", c.name, err, c.wantFlag)
		}
		client, cerr := cfg.SMSClient()
		switch {
		case c.ok && c.url == "" && (client != nil || cerr != nil):
			t.Errorf("%s: SMSClient = %v, %v; want nil, nil", c.name, client, cerr)
		case c.ok && c.url != "" && (client == nil || cerr != nil):
			t.Errorf("%s: SMSClient = %v, %v; want a client", c.name, client, cerr)
		}
	}
}

func TestConfigValidateConcierge(t *testing.T) {
	const key = "sk-NOTREAL0123456789"
	for _, c := range []struct {
		name               string
		url, apiKey, model string
		allowPrivate       bool
		ok                 bool
		wantFlag, answerer string
	}{
		{name: "none: the embedded answerer", ok: true, answerer: "embedded"},
		{name: "all three", url: "https://api.openai.com/v1", apiKey: key, model: "gpt-4o-mini", ok: true, answerer: "openai"},
		{name: "http with allow private", url: "http://127.0.0.1:8080/v1", apiKey: key, model: "m", allowPrivate: true, ok: true, answerer: "openai"},
		{name: "http", url: "http://api.example/v1", apiKey: key, model: "m", wantFlag: "concierge-api-url"},
		{name: "key without url", apiKey: key, wantFlag: "concierge-api-url"},
		{name: "model without url", model: "m", wantFlag: "concierge-api-url"},
		{name: "url without key", url: "https://api.example/v1", model: "m", wantFlag: "concierge-api-key"},
		{name: "url without model", url: "https://api.example/v1", apiKey: key, wantFlag: "concierge-model"},
		{name: "key with a space", url: "https://api.example/v1", apiKey: "Bearer " + key, model: "m", wantFlag: "concierge-api-key"},
		{name: "url with the key in its query", url: "https://api.example/v1?key=" + key, apiKey: key, model: "m", wantFlag: "concierge-api-url"},
	} {
		cfg := validConfig()
		cfg.ConciergeAPIURL, cfg.ConciergeAPIKey, cfg.ConciergeModel, cfg.OutboundAllowPrivate = c.url, c.apiKey, c.model, c.allowPrivate
		err := cfg.Validate()
		if c.ok != (err == nil) {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), c.wantFlag) || strings.Contains(err.Error(), key) {
				t.Errorf("%s: error %q does not name %s, or echoes the key", c.name, err, c.wantFlag)
			}
			continue
		}
		answerer, name, aerr := cfg.ConciergeAnswerer()
		if aerr != nil || answerer == nil || name != c.answerer {
			t.Errorf("%s: ConciergeAnswerer = %v, %q, %v; want %s", c.name, answerer, name, aerr, c.answerer)
		}
	}
}
