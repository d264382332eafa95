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
