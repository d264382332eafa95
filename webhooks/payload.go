package webhooks

import (
	"encoding/json"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// Body is an outbound event as posted (DESIGN.md §7): the same bytes for
// every subscription and every attempt.
type Body struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	ShopID    string    `json:"shop_id"`
	Data      any       `json:"data"`
}

// EventID is the outbound id (evt_…) of the outbound event made from the
// log event id: stable across subscriptions, attempts and restarts, so a
// receiver drops a repeat by it.
func EventID(logEventID string) string {
	return domain.IDFromExternal(domain.PrefixEvent, "webhook-event", "", logEventID)
}

// sources are the domain event types an outbound event is made from.
var sources = []string{
	"CustomerCreated", "CustomerUpdated", "CustomerTagsSet", "CustomerErased",
	"OrderRecorded", "RefundRecorded",
	"ProductCreated", "ProductUpdated", "ProductRecorded", "ProductDeleted",
	"InventoryLevelUpdated", "InventoryAdjusted",
	"CampaignLaunched", "CampaignPaused", "CampaignResumed", "CampaignCompleted",
	"JourneyPaused", "JourneyResumed", "JourneyEnrollmentStarted", "JourneyEnrollmentCompleted", "JourneyEnrollmentExited",
	"MessageStatusReported", "WhatsAppTemplateStatusUpdated", "GdprRequestCompleted", "AnomalyRaised",
	"ReviewSubmitted", "ReviewPublished",
}

// Outbound returns the outbound event type and data of a domain event, or
// ok=false when it makes none. Data carries ids and the resource's public
// fields, never personal data (no e-mail, name, phone, address, note or
// free text a customer wrote): a payload is stored until it is delivered,
// and must not outlive a customer's erasure.
func Outbound(ev domain.Event) (typ string, data any, ok bool) {
	switch e := ev.(type) {
	case *domain.CustomerCreated:
		return "customer.created", customerData(e.CustomerID, &e.CustomerProfile), true
	case *domain.CustomerUpdated:
		if e.Stale {
			return "", nil, false
		}
		return "customer.updated", customerData(e.CustomerID, &e.CustomerProfile), true
	case *domain.CustomerTagsSet:
		return "customer.updated", map[string]any{"customer_id": e.CustomerID, "tags": nonNil(e.Tags)}, true
	case *domain.CustomerErased:
		return "customer.redacted", map[string]any{"customer_id": e.CustomerID, "orders": nonNil(e.Orders)}, true
	case *domain.OrderRecorded:
		if e.Stale {
			return "", nil, false
		}
		return orderType(e), orderData(e), true
	case *domain.RefundRecorded:
		return "order.refunded", map[string]any{"order_id": e.OrderID, "refund_id": e.RefundID, "customer_id": e.CustomerID,
			"external_id": e.ExternalID, "amount": e.Amount, "currency": e.Currency, "lines": len(e.Lines), "created_at": e.CreatedAt}, true
	case *domain.ProductCreated:
		return "product.created", map[string]any{"product_id": e.ProductID, "title": e.Title, "handle": e.Handle,
			"status": e.Status, "vendor": e.Vendor, "product_type": e.ProductType, "tags": nonNil(e.Tags), "variants": len(e.Variants)}, true
	case *domain.ProductUpdated:
		return "product.updated", productUpdate(e), true
	case *domain.ProductRecorded:
		if e.Stale {
			return "", nil, false
		}
		typ := "product.updated"
		if e.Topic == "products/create" {
			typ = "product.created"
		}
		return typ, map[string]any{"product_id": e.ProductID, "external_id": e.ExternalID, "title": e.Title, "handle": e.Handle,
			"status": e.Status, "vendor": e.Vendor, "product_type": e.ProductType, "tags": nonNil(e.Tags), "variants": len(e.Variants)}, true
	case *domain.ProductDeleted:
		return "product.deleted", map[string]any{"product_id": e.ProductID, "external_id": e.ExternalID, "deleted_at": e.DeletedAt}, true
	case *domain.InventoryLevelUpdated:
		if e.Stale {
			return "", nil, false
		}
		return "inventory.updated", map[string]any{"levels": []map[string]any{{"level_id": e.LevelID,
			"inventory_item_id": e.InventoryItemID, "location_id": e.LocationID, "available": e.Available}}}, true
	case *domain.InventoryAdjusted:
		levels := make([]map[string]any, len(e.Items))
		for i, it := range e.Items {
			levels[i] = map[string]any{"level_id": it.LevelID, "inventory_item_id": it.InventoryItemID, "location_id": it.LocationID,
				"available": it.Available}
		}
		return "inventory.updated", map[string]any{"adjustment_id": e.AdjustmentID, "levels": levels}, true
	case *domain.CampaignLaunched:
		return "campaign.launched", map[string]any{"campaign_id": e.CampaignID, "status": e.Status, "launched_at": e.LaunchedAt}, true
	case *domain.CampaignPaused:
		return "campaign.paused", map[string]any{"campaign_id": e.CampaignID, "reason": e.Reason, "template_id": e.TemplateID,
			"paused_at": e.PausedAt}, true
	case *domain.CampaignResumed:
		return "campaign.resumed", map[string]any{"campaign_id": e.CampaignID, "reason": e.Reason, "status": e.Status,
			"resumed_at": e.ResumedAt}, true
	case *domain.CampaignCompleted:
		return "campaign.completed", map[string]any{"campaign_id": e.CampaignID, "recipients": e.Recipients, "sent": e.Sent,
			"failed": e.Failed, "skipped": e.Skipped, "completed_at": e.CompletedAt}, true
	case *domain.JourneyPaused:
		return "journey.paused", map[string]any{"journey_id": e.JourneyID, "reason": e.Reason, "template_id": e.TemplateID,
			"paused_at": e.PausedAt}, true
	case *domain.JourneyResumed:
		return "journey.resumed", map[string]any{"journey_id": e.JourneyID, "reason": e.Reason, "resumed_at": e.ResumedAt}, true
	case *domain.JourneyEnrollmentStarted:
		return "enrollment.started", map[string]any{"enrollment_id": e.EnrollmentID, "journey_id": e.JourneyID,
			"customer_id": e.CustomerID, "trigger_topic": e.TriggerTopic, "enrolled_at": e.EnrolledAt}, true
	case *domain.JourneyEnrollmentCompleted:
		return "enrollment.completed", map[string]any{"enrollment_id": e.EnrollmentID, "journey_id": e.JourneyID,
			"customer_id": e.CustomerID, "completed_at": e.CompletedAt}, true
	case *domain.JourneyEnrollmentExited:
		return "enrollment.exited", map[string]any{"enrollment_id": e.EnrollmentID, "journey_id": e.JourneyID,
			"customer_id": e.CustomerID, "reason": e.Reason, "exited_at": e.ExitedAt}, true
	case *domain.MessageStatusReported:
		switch e.Status {
		case "delivered", "read", "failed":
		default:
			return "", nil, false
		}
		return "message." + e.Status, map[string]any{"message_id": e.MessageID, "customer_id": e.CustomerID, "source": e.Source,
			"status": e.Status, "at": e.At, "error_code": e.ErrorCode}, true
	case *domain.WhatsAppTemplateStatusUpdated:
		return "template.status_changed", map[string]any{"template_id": e.TemplateID, "name": e.Name, "language": e.Language,
			"state": e.State, "reason": e.Reason, "at": e.At}, true
	case *domain.AnomalyRaised:
		// A shop's only: the operator's anomalies (no shop) go to no
		// subscriber. The summary stays in-app (it may grow wordy and
		// change); the title and the resources say what happened.
		if e.ShopID == "" {
			return "", nil, false
		}
		res := e.Resources
		if res == nil {
			res = []domain.AnomalyResource{}
		}
		return "anomaly.raised", map[string]any{"anomaly_id": e.AnomalyID, "severity": e.Severity, "kind": e.Kind, "title": e.Title,
			"resources": res, "raised_at": e.RaisedAt}, true
	case *domain.ReviewSubmitted:
		// Ids, the rating and the badge only: the texts and the author's
		// name and e-mail are the customer's personal data.
		return "review.submitted", map[string]any{"review_id": e.ReviewID, "product_id": e.ProductID, "customer_id": e.CustomerID,
			"rating": e.Rating, "verified": e.Verified, "submitted_at": e.SubmittedAt}, true
	case *domain.ReviewPublished:
		return "review.published", map[string]any{"review_id": e.ReviewID, "rule": e.Rule, "published_at": e.PublishedAt}, true
	case *domain.GdprRequestCompleted:
		return "gdpr.data_request.completed", map[string]any{"request_id": e.RequestID, "kind": e.Kind, "channel": e.Channel,
			"status": e.Status, "completed_at": e.CompletedAt}, true
	}
	return "", nil, false
}

func customerData(id string, p *domain.CustomerProfile) map[string]any {
	return map[string]any{"customer_id": id, "external_id": p.ExternalID, "state": p.State, "currency": p.Currency,
		"accepts_marketing": p.AcceptsMarketing, "orders_count": p.OrdersCount, "total_spent": p.TotalSpent,
		"platform_tags": nonNil(p.PlatformTags)}
}

// orderType is the outbound type of an order snapshot by its topic; the
// first snapshot of an order is its creation whatever the topic.
func orderType(e *domain.OrderRecorded) string {
	switch {
	case e.First:
		return "order.created"
	case e.Topic == "orders/paid":
		return "order.paid"
	case e.Topic == "orders/fulfilled":
		return "order.fulfilled"
	case e.Topic == "orders/cancelled":
		return "order.cancelled"
	}
	return "order.updated"
}

func orderData(e *domain.OrderRecorded) map[string]any {
	return map[string]any{"order_id": e.OrderID, "customer_id": e.CustomerID, "external_id": e.ExternalID, "name": e.Name,
		"topic": e.Topic, "financial_status": e.FinancialStatus, "fulfillment_status": e.FulfillmentStatus, "currency": e.Currency,
		"total_price": e.TotalPrice, "subtotal_price": e.SubtotalPrice, "total_tax": e.TotalTax, "total_discounts": e.TotalDiscounts,
		"lines": len(e.Lines), "source_name": e.SourceName, "created_at": e.CreatedAt, "updated_at": e.UpdatedAt}
}

func productUpdate(e *domain.ProductUpdated) map[string]any {
	d := map[string]any{"product_id": e.ProductID, "updated_at": e.UpdatedAt}
	if e.Title != nil {
		d["title"] = *e.Title
	}
	if e.Status != nil {
		d["status"] = *e.Status
	}
	if e.Vendor != nil {
		d["vendor"] = *e.Vendor
	}
	if e.ProductType != nil {
		d["product_type"] = *e.ProductType
	}
	if e.Tags != nil {
		d["tags"] = nonNil(*e.Tags)
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// encode builds the body of the outbound event of log event e.
func encode(e *eventlog.Event, typ string, data any) ([]byte, error) {
	return json.Marshal(Body{ID: EventID(e.ID.String()), Type: typ, CreatedAt: e.RecordedAt.UTC(), ShopID: e.ShopID, Data: data})
}
