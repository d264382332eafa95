package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// orderWith folds events into a fresh order aggregate.
func orderWith(evs ...domain.Event) *domain.Order {
	o := &domain.Order{}
	for _, e := range evs {
		o.Apply(e)
	}
	return o
}

func recordedOrder(cancelled time.Time) *domain.OrderRecorded {
	return &domain.OrderRecorded{OrderID: "ord_1", ShopID: "shop_1", First: true, OrderSnapshot: domain.OrderSnapshot{
		ExternalID: "1001", Currency: "EUR", TotalPrice: 500000, CancelledAt: cancelled,
		Lines: []domain.OrderLine{{LineID: "11", Quantity: 2, Price: 250000}}}}
}

func TestOrderCancellationDecisions(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	req := domain.CancellationRequest{Reason: "CUSTOMER", Refund: true}
	requested := &domain.OrderCancellationRequested{ActionID: "oac_1", OrderID: "ord_1", ShopID: "shop_1", Reason: "CUSTOMER"}
	for name, c := range map[string]struct {
		given []domain.Event
		shop  string
		req   domain.CancellationRequest
		code  domain.Code
	}{
		"open order":              {given: []domain.Event{recordedOrder(time.Time{})}, shop: "shop_1", req: req},
		"unknown order":           {shop: "shop_1", req: req, code: domain.CodeNotFound},
		"other shop's order":      {given: []domain.Event{recordedOrder(time.Time{})}, shop: "shop_2", req: req, code: domain.CodeNotFound},
		"already cancelled":       {given: []domain.Event{recordedOrder(now)}, shop: "shop_1", req: req, code: domain.CodeConflict},
		"cancellation on its way": {given: []domain.Event{recordedOrder(time.Time{}), requested}, shop: "shop_1", req: req, code: domain.CodeConflict},
		"after a failed one": {given: []domain.Event{recordedOrder(time.Time{}), requested,
			&domain.OrderActionFailed{ActionID: "oac_1", Kind: domain.OrderActionCancel, Code: "platform_rejected"}}, shop: "shop_1", req: req},
		"unknown reason": {given: []domain.Event{recordedOrder(time.Time{})}, shop: "shop_1",
			req: domain.CancellationRequest{Reason: "BORED"}, code: domain.CodeInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := orderWith(c.given...).RequestCancellation(c.shop, "oac_2", c.req, now)
			if got := domain.ErrorCode(err); got != c.code {
				t.Fatalf("error %v, want code %q", err, c.code)
			}
			if c.code == "" && (ev.ExternalID != "1001" || ev.ActionID != "oac_2" || !ev.Refund) {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

func TestOrderRefundDecisionsAndConfirmation(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	o := orderWith(recordedOrder(time.Time{}), &domain.RefundRecorded{RefundID: "rfd_0", ExternalID: "900", Amount: 100000})
	if got := o.Refundable(); got != 400000 {
		t.Fatalf("refundable %s", got)
	}
	for name, c := range map[string]struct {
		req   domain.RefundRequest
		field string
	}{
		"over what remains": {req: domain.RefundRequest{Amount: 400001}, field: "amount"},
		"nothing":           {req: domain.RefundRequest{}, field: "amount"},
		"other currency":    {req: domain.RefundRequest{Amount: 1, Currency: "USD"}, field: "currency"},
		"unknown line":      {req: domain.RefundRequest{Lines: []domain.RefundRequestLine{{LineID: "12", Quantity: 1}}}, field: "line_items[0].line_item_id"},
		"too many":          {req: domain.RefundRequest{Lines: []domain.RefundRequestLine{{LineID: "11", Quantity: 3}}}, field: "line_items[0].quantity"},
	} {
		_, err := o.RequestRefund("shop_1", "oac_x", c.req, now)
		if e, ok := err.(*domain.Error); !ok || e.Code != domain.CodeInvalid || e.Field != c.field {
			t.Errorf("%s: %v, want field %s", name, err, c.field)
		}
	}
	ev, err := o.RequestRefund("shop_1", "oac_1", domain.RefundRequest{Amount: 300000, Lines: []domain.RefundRequestLine{{LineID: "11", Quantity: 1, Restock: true}}}, now)
	if err != nil || ev.Currency != "EUR" {
		t.Fatalf("%v %+v", err, ev)
	}
	o.Apply(ev)
	if got := o.Refundable(); got != 100000 {
		t.Fatalf("refundable with one requested %s", got)
	}
	out, err := o.RecordActionOutcome("oac_1", domain.ActionOutcome{PlatformRefundID: "901"}, now)
	if err != nil {
		t.Fatal(err)
	}
	o.Apply(out)
	if s := o.ActionStatus("oac_1"); s != domain.ActionStatusSubmitted {
		t.Fatalf("status %s", s)
	}
	if again, _ := o.RecordActionOutcome("oac_1", domain.ActionOutcome{FailureCode: "x"}, now); again != nil {
		t.Errorf("second outcome %+v", again)
	}
	o.Apply(&domain.RefundRecorded{RefundID: "rfd_1", ExternalID: "901", Amount: 300000})
	if s := o.ActionStatus("oac_1"); s != domain.ActionStatusConfirmed {
		t.Fatalf("status after the webhook %s", s)
	}
	if got := o.Refundable(); got != 100000 {
		t.Errorf("refundable after confirmation %s", got)
	}
}
