package domain_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// TestFlowConfigure: a flow never configured starts from its defaults, a
// patch changes only what it sends, a channel switch drops the other
// channel's content, and every refusal names the attribute.
func TestFlowConfigure(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	review, cart := domain.DefaultFlowSettings(domain.FlowReviewRequest), domain.DefaultFlowSettings(domain.FlowCartAbandonment)
	if review.DelayMinutes != 10080 || cart.DelayMinutes != 240 || !review.Enabled || !cart.Enabled ||
		review.Channel != domain.ChannelEmail || cart.Channel != domain.ChannelEmail {
		t.Fatalf("defaults: %+v / %+v", review, cart)
	}
	whatsapp := domain.FlowSettings{Enabled: true, DelayMinutes: 240, Channel: domain.ChannelWhatsApp, Template: "cart_reminder",
		Language: domain.DefaultLanguage, Parameters: []string{"{{recovery_link}}"}}
	for _, c := range []struct {
		name, flow string
		given      []domain.FlowSettings // FlowConfigured settings already recorded
		patch      domain.FlowPatch
		want       domain.FlowSettings
		field      string // the 422's field; "" for success
	}{
		{name: "defaults kept", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{Enabled: ptr(false)},
			want: func() domain.FlowSettings { s := review; s.Enabled = false; return s }()},
		{name: "delay changed", flow: domain.FlowCartAbandonment, patch: domain.FlowPatch{DelayMinutes: ptr(15)},
			want: func() domain.FlowSettings { s := cart; s.DelayMinutes = 15; return s }()},
		{name: "channel switch drops the content", flow: domain.FlowCartAbandonment,
			patch: domain.FlowPatch{Channel: ptr(domain.ChannelWhatsApp), Template: ptr("cart_reminder"), Parameters: &[]string{"{{recovery_link}}"}},
			want:  whatsapp},
		{name: "whatsapp to sms starts afresh", flow: domain.FlowCartAbandonment, given: []domain.FlowSettings{whatsapp},
			patch: domain.FlowPatch{Channel: ptr(domain.ChannelSMS), Text: ptr("Your cart: {{ recovery_link }}")},
			want:  domain.FlowSettings{Enabled: true, DelayMinutes: 240, Channel: domain.ChannelSMS, Text: "Your cart: {{ recovery_link }}"}},
		{name: "the same channel keeps the content", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{Channel: ptr(domain.ChannelEmail)},
			want: review},
		{name: "review page", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{LinkURL: ptr(" https://shop.example.com/pages/rate ")},
			want: func() domain.FlowSettings { s := review; s.LinkURL = "https://shop.example.com/pages/rate"; return s }()},
		{name: "delay below zero", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{DelayMinutes: ptr(-1)}, field: "delay_minutes"},
		{name: "delay over 90 days", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{DelayMinutes: ptr(domain.MaxFlowDelayMinutes + 1)},
			field: "delay_minutes"},
		{name: "cart abandoned too soon", flow: domain.FlowCartAbandonment, patch: domain.FlowPatch{DelayMinutes: ptr(14)}, field: "delay_minutes"},
		{name: "e-mail text without the link", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{Text: ptr("Tell us!")}, field: "text"},
		{name: "sms without the link", flow: domain.FlowCartAbandonment,
			patch: domain.FlowPatch{Channel: ptr(domain.ChannelSMS), Text: ptr("Come back")}, field: "text"},
		{name: "another flow's link", flow: domain.FlowCartAbandonment, patch: domain.FlowPatch{Text: ptr("{{review_link}}")}, field: "text"},
		{name: "unknown merge field", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{Subject: ptr("Hi {{coupon}}")}, field: "subject"},
		{name: "whatsapp without a template", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{Channel: ptr(domain.ChannelWhatsApp)},
			field: "template"},
		{name: "link_url over http", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{LinkURL: ptr("http://shop.example.com/r")},
			field: "link_url"},
		{name: "link_url with a fragment", flow: domain.FlowReviewRequest, patch: domain.FlowPatch{LinkURL: ptr("https://shop.example.com/r#x")},
			field: "link_url"},
		{name: "link_url of the cart abandonment", flow: domain.FlowCartAbandonment,
			patch: domain.FlowPatch{LinkURL: ptr("https://shop.example.com/r")}, field: "link_url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f domain.Flow
			for _, s := range c.given {
				f.Apply(&domain.FlowConfigured{ShopID: "shop_a", Flow: c.flow, Settings: s, ConfiguredAt: now.Add(-time.Hour)})
			}
			ev, err := f.Configure("shop_a", c.flow, c.patch, now)
			if c.field != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != c.field {
					t.Fatalf("err = %v, want 422 on %s", err, c.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.ShopID != "shop_a" || ev.Flow != c.flow || !ev.ConfiguredAt.Equal(now) || ev.ConfiguredAt.Location() != time.UTC {
				t.Fatalf("event: %+v", ev)
			}
			if !reflect.DeepEqual(ev.Settings, c.want) {
				t.Fatalf("settings:\n got %+v\nwant %+v", ev.Settings, c.want)
			}
		})
	}
	var f domain.Flow
	if _, err := f.Configure("shop_a", "welcome", domain.FlowPatch{Enabled: ptr(true)}, now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown flow: %v", err)
	}
}
