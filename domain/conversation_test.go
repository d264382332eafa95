package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestConversationEventsAreInTheCatalogue(t *testing.T) {
	c := domain.Events()
	for _, name := range []string{"ConversationReplyRequested", "ConversationAssigned", "ConversationClosed", "ConversationQueued"} {
		if c.Version(name) != 1 {
			t.Errorf("%s is not in the catalogue", name)
		}
	}
	var p domain.Personal = domain.ConversationReplyRequested{CustomerID: "cus_1"}
	if p.Subject() != "cus_1" || strings.Join(p.PersonalFields(), ",") != "to,text" {
		t.Fatalf("the reply's personal fields: %s %v", p.Subject(), p.PersonalFields())
	}
}

func TestConversationIDDependsOnShopAndCustomer(t *testing.T) {
	a := domain.ConversationID("shop_a", domain.CustomerIDFromPhone("shop_a", "15550001"))
	if !strings.HasPrefix(a, domain.PrefixConversation) || a != domain.ConversationID("shop_a", domain.CustomerIDFromPhone("shop_a", "15550001")) {
		t.Fatalf("id %s", a)
	}
	if a == domain.ConversationID("shop_b", domain.CustomerIDFromPhone("shop_b", "15550001")) ||
		a == domain.ConversationID("shop_a", domain.CustomerIDFromPhone("shop_a", "15550002")) {
		t.Fatal("two conversations share an id")
	}
}

func TestConversationReply(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	facts := domain.ConversationFacts{ID: "cnv_1", ShopID: "shop_1", CustomerID: "cus_1", WhatsAppID: "15550001",
		LastInboundAt: now.Add(-23 * time.Hour)}
	erased := facts
	erased.WhatsAppID = ""
	old := facts
	old.LastInboundAt = now.Add(-domain.CustomerServiceWindow)
	never := facts
	never.LastInboundAt = time.Time{}
	for _, tc := range []struct {
		name  string
		facts domain.ConversationFacts
		text  string
		err   string
	}{
		{"within the window", facts, "It ships today", ""},
		{"the longest text", facts, strings.Repeat("é", domain.MaxReplyText), ""},
		{"empty", facts, "", "required"},
		{"blank", facts, " \n ", "required"},
		{"too long", facts, strings.Repeat("é", domain.MaxReplyText+1), "at most 4096"},
		{"not UTF-8", facts, "a\xffb", "required"},
		{"24 hours after the last message", old, "Hello", "24 hours"},
		{"no inbound message", never, "Hello", "24 hours"},
		{"erased customer", erased, "Hello", "erased"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := domain.ConversationReply(tc.facts, "rep-1", tc.text, "tok_1", now)
			if tc.err != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Field != "text" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want a validation error on text with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.To != "15550001" || ev.Text != tc.text || ev.CustomerID != "cus_1" || ev.ShopID != "shop_1" ||
				ev.MessageID != domain.ConversationReplyMessageID("cnv_1", "rep-1") || !strings.HasPrefix(ev.MessageID, domain.PrefixMessage) {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

func TestConversationAssignAndQueue(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	facts := domain.ConversationFacts{ID: "cnv_1", ShopID: "shop_1"}
	if ev, err := domain.AssignConversation(facts, "  alice ", now); err != nil || ev.Assignee != "alice" {
		t.Fatalf("assign: %+v %v", ev, err)
	}
	if ev, err := domain.AssignConversation(facts, "", now); err != nil || ev.Assignee != "" {
		t.Fatalf("unassign: %+v %v", ev, err)
	}
	for _, bad := range []string{strings.Repeat("x", domain.MaxAssignee+1), "a\nb"} {
		if _, err := domain.AssignConversation(facts, bad, now); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Fatalf("assignee %q: %v", bad, err)
		}
	}
	if ev, err := domain.QueueConversation(facts, domain.QueueHuman, "keyword: refund", now); err != nil || ev.Queue != domain.QueueHuman {
		t.Fatalf("queue: %+v %v", ev, err)
	}
	if _, err := domain.QueueConversation(facts, domain.QueueClosed, "x", now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("queue closed: %v", err)
	}
	if _, err := domain.QueueConversation(facts, domain.QueueHuman, "", now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("queue without a reason: %v", err)
	}
	if ev := domain.CloseConversation(facts, now); ev.ConversationID != "cnv_1" || !ev.ClosedAt.Equal(now) {
		t.Fatalf("close %+v", ev)
	}
}
