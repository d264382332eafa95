package dataexport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/outbound"
)

// EventType is the outbound event type of a data export.
const EventType = "customer.data_request"

// Reasons of failed attempts that are not the transport's.
const (
	ReasonNoDestination     = "no_destination"
	ReasonSMTPNotConfigured = "smtp_not_configured"
)

// Destination is where a shop's exports go: the data-request URL when
// set (signed with SigningSecret), otherwise the contact e-mail.
type Destination struct {
	URL, SigningSecret, ContactEmail string
}

// Delivery sends exports: over HTTPS with Sender, by e-mail with Mailer
// (nil or unconfigured: no e-mail).
type Delivery struct {
	Sender *outbound.Sender
	Mailer *Mailer
}

// Outcome is the result of one attempt. Reason is "" on success, and
// never holds personal data or a body.
type Outcome struct {
	Channel string
	Reason  string
	// Bytes and SHA256 (hex) describe the document delivered: the signed
	// body posted, or the attached export.
	Bytes  int
	SHA256 string
}

// webhookBody is the outbound notification of DESIGN.md §7.
type webhookBody struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	ShopID    string    `json:"shop_id"`
	Data      *Export   `json:"data"`
}

// NotificationID is the outbound event id of a request's export: the
// same for every attempt, so a subscriber can drop a repeat.
func NotificationID(shopID, requestID string) string {
	return domain.IDFromExternal(domain.PrefixEvent, "data_export", shopID, requestID)
}

// Deliver sends x to dest and reports the outcome; an error is returned
// only when the export cannot be encoded.
func (d *Delivery) Deliver(ctx context.Context, dest Destination, x *Export, now time.Time) (Outcome, error) {
	switch {
	case dest.URL != "":
		id := NotificationID(x.ShopID, x.RequestID)
		body, err := json.Marshal(webhookBody{ID: id, Type: EventType, CreatedAt: now.UTC(), ShopID: x.ShopID, Data: x})
		if err != nil {
			return Outcome{}, fmt.Errorf("encode export notification: %w", err)
		}
		o := Outcome{Channel: domain.ExportChannelWebhook, Bytes: len(body), SHA256: digest(body)}
		sender := d.Sender
		if sender == nil {
			sender = &outbound.Sender{}
		}
		if _, err := sender.Send(ctx, []byte(dest.SigningSecret), outbound.Message{URL: dest.URL, EventID: id, EventType: EventType,
			Timestamp: now, Body: body}); err != nil {
			o.Reason = outbound.Reason(err)
		}
		return o, nil
	case dest.ContactEmail != "":
		doc, err := x.JSON()
		if err != nil {
			return Outcome{}, err
		}
		o := Outcome{Channel: domain.ExportChannelEmail, Bytes: len(doc), SHA256: digest(doc)}
		if !d.Mailer.Configured() {
			o.Reason = ReasonSMTPNotConfigured
			return o, nil
		}
		err = d.Mailer.Send(ctx, Mail{To: dest.ContactEmail, Date: now,
			Subject:        "Customer data request " + x.RequestID,
			Text:           mailText(x),
			AttachmentName: "data-request-" + x.RequestID + ".json", Attachment: doc})
		if err != nil {
			o.Reason = mailReason(err)
		}
		return o, nil
	default:
		return Outcome{Reason: ReasonNoDestination}, nil
	}
}

func mailReason(err error) string {
	var me *MailError
	if errors.As(err, &me) {
		return me.Reason
	}
	return "smtp_failed"
}

func mailText(x *Export) string {
	known := "The attached JSON file holds everything the service keeps on this customer."
	if !x.CustomerKnown {
		known = "The service holds no profile of this customer; the attached JSON file says so and lists anything else found."
	}
	return fmt.Sprintf("The commerce platform asked for the data held on customer %s of shop %s (request %s).\r\n\r\n%s\r\n"+
		"Please forward it to the customer within the legal deadline.\r\n", x.CustomerID, x.ShopID, x.RequestID, known)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
