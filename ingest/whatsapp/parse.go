package whatsapp

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Change fields the service maps; any other field is recorded as a
// delivery.
const (
	FieldMessages       = "messages"
	FieldTemplateStatus = "message_template_status_update"
	FieldQuality        = "phone_number_quality_update"
	FieldAccountAlerts  = "account_alerts"
	FieldAccountReview  = "account_review_update"
)

// Notification is a webhook body: entries, one per business account.
type Notification struct {
	Object  string
	Entries []Entry
}

// Entry is one business account's part of a notification.
type Entry struct {
	// ID is the business account id (WABA id).
	ID string
	// Time is when the platform triggered the webhook (zero when absent).
	Time    time.Time
	Changes []Change
	// Raw is the entry's JSON as sent.
	Raw []byte
}

// Change is one change of an entry: its field and its value, parsed by
// the Parse… function of the field.
type Change struct {
	Field string
	Value json.RawMessage
}

type rawNotification struct {
	Object string            `json:"object"`
	Entry  []json.RawMessage `json:"entry"`
}

type rawEntry struct {
	ID      payload.Text `json:"id"`
	Time    epoch        `json:"time"`
	Changes []struct {
		Field string          `json:"field"`
		Value json.RawMessage `json:"value"`
	} `json:"changes"`
}

// Parse reads a notification. It fails with a validation *domain.Error
// naming the field when the body is not the platform's shape: not JSON, no
// entry, an entry without a numeric id, a change without a field.
func Parse(body []byte) (*Notification, error) {
	var raw rawNotification
	if err := payload.Decode(body, &raw); err != nil {
		return nil, err
	}
	if len(raw.Entry) == 0 {
		return nil, domain.Invalid("entry", "at least one entry is required")
	}
	n := &Notification{Object: raw.Object, Entries: make([]Entry, 0, len(raw.Entry))}
	for _, er := range raw.Entry {
		var re rawEntry
		if err := payload.DecodeField(er, &re, "entry"); err != nil {
			return nil, err
		}
		if !domain.ValidMetaID(string(re.ID)) {
			return nil, domain.Invalid("entry.id", "the business account id must be 1 to 32 digits")
		}
		e := Entry{ID: string(re.ID), Time: re.Time.time(), Raw: er, Changes: make([]Change, 0, len(re.Changes))}
		for _, c := range re.Changes {
			if c.Field == "" || len(c.Field) > 100 {
				return nil, domain.Invalid("entry.changes.field", "a change needs a field of at most 100 characters")
			}
			e.Changes = append(e.Changes, Change{Field: c.Field, Value: c.Value})
		}
		n.Entries = append(n.Entries, e)
	}
	return n, nil
}

// Messages is the value of a messages change: inbound messages, statuses
// of outbound ones, or both.
type Messages struct {
	DisplayPhoneNumber string
	PhoneNumberID      string
	Messages           []domain.InboundMessage
	Statuses           []domain.MessageStatus
}

type rawMessages struct {
	Metadata struct {
		DisplayPhoneNumber string       `json:"display_phone_number"`
		PhoneNumberID      payload.Text `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []rawMessage `json:"messages"`
	Statuses []rawStatus  `json:"statuses"`
}

type caption struct {
	Caption string `json:"caption"`
}

type rawMessage struct {
	From      string `json:"from"`
	ID        string `json:"id"`
	Timestamp epoch  `json:"timestamp"`
	Type      string `json:"type"`
	Text      *struct {
		Body string `json:"body"`
	} `json:"text"`
	Button *struct {
		Text string `json:"text"`
	} `json:"button"`
	Interactive *struct {
		ButtonReply *struct {
			Title string `json:"title"`
		} `json:"button_reply"`
		ListReply *struct {
			Title string `json:"title"`
		} `json:"list_reply"`
	} `json:"interactive"`
	Image    *caption `json:"image"`
	Video    *caption `json:"video"`
	Document *caption `json:"document"`
}

// text is what the customer wrote: the body of a text message, the label
// of a button or interactive reply, or a media caption ("" for the rest).
func (m *rawMessage) text() string {
	switch {
	case m.Text != nil:
		return m.Text.Body
	case m.Button != nil:
		return m.Button.Text
	case m.Interactive != nil && m.Interactive.ButtonReply != nil:
		return m.Interactive.ButtonReply.Title
	case m.Interactive != nil && m.Interactive.ListReply != nil:
		return m.Interactive.ListReply.Title
	}
	for _, c := range []*caption{m.Image, m.Video, m.Document} {
		if c != nil {
			return c.Caption
		}
	}
	return ""
}

type rawStatus struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Timestamp   epoch  `json:"timestamp"`
	RecipientID string `json:"recipient_id"`
	// BizOpaqueCallbackData is what the business sent with the message
	// (the service's message id) and the platform returns on its statuses.
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data"`
	Errors                []struct {
		Code  payload.Text `json:"code"`
		Title string       `json:"title"`
	} `json:"errors"`
}

// ParseMessages reads the value of a messages change of a business
// account. A message's sender gets the profile name of the contact with
// the same wa_id.
func ParseMessages(businessAccountID string, value json.RawMessage) (*Messages, error) {
	var raw rawMessages
	if err := payload.DecodeField(value, &raw, "messages"); err != nil {
		return nil, err
	}
	names := make(map[string]string, len(raw.Contacts))
	for _, c := range raw.Contacts {
		names[c.WaID] = c.Profile.Name
	}
	out := &Messages{DisplayPhoneNumber: raw.Metadata.DisplayPhoneNumber, PhoneNumberID: string(raw.Metadata.PhoneNumberID)}
	for i := range raw.Messages {
		m := &raw.Messages[i]
		out.Messages = append(out.Messages, domain.InboundMessage{
			BusinessAccountID: businessAccountID, PhoneNumberID: out.PhoneNumberID,
			MessageID: m.ID, From: m.From, ProfileName: names[m.From], Type: m.Type, Text: m.text(),
			SentAt: m.Timestamp.time(),
		})
	}
	for _, s := range raw.Statuses {
		st := domain.MessageStatus{Source: Source, MessageID: s.ID, Status: s.Status, RecipientID: s.RecipientID, At: s.Timestamp.time(),
			ClientReference: s.BizOpaqueCallbackData}
		if len(s.Errors) > 0 {
			st.ErrorCode, st.ErrorTitle = string(s.Errors[0].Code), s.Errors[0].Title
		}
		out.Statuses = append(out.Statuses, st)
	}
	return out, nil
}

// ParseTemplateStatus reads the value of a message_template_status_update
// change; at is the entry's time.
func ParseTemplateStatus(businessAccountID string, at time.Time, value json.RawMessage) (domain.TemplateStatus, error) {
	var raw struct {
		Event    string       `json:"event"`
		ID       payload.Text `json:"message_template_id"`
		Name     string       `json:"message_template_name"`
		Language string       `json:"message_template_language"`
		Reason   *string      `json:"reason"`
	}
	if err := payload.DecodeField(value, &raw, FieldTemplateStatus); err != nil {
		return domain.TemplateStatus{}, err
	}
	ts := domain.TemplateStatus{BusinessAccountID: businessAccountID, TemplateID: string(raw.ID), Name: raw.Name,
		Language: raw.Language, Event: raw.Event, At: at}
	if raw.Reason != nil {
		ts.Reason = *raw.Reason
	}
	return ts, nil
}

// ParseQualityUpdate reads the value of a phone_number_quality_update
// change; at is the entry's time. A stated quality_rating is optional (the
// platform's own payload does not carry one; some senders add it).
func ParseQualityUpdate(businessAccountID string, at time.Time, value json.RawMessage) (domain.PhoneQuality, error) {
	var raw struct {
		DisplayPhoneNumber payload.Text `json:"display_phone_number"`
		Event              string       `json:"event"`
		CurrentLimit       string       `json:"current_limit"`
		OldLimit           string       `json:"old_limit"`
		QualityRating      string       `json:"quality_rating"`
	}
	if err := payload.DecodeField(value, &raw, FieldQuality); err != nil {
		return domain.PhoneQuality{}, err
	}
	return domain.PhoneQuality{BusinessAccountID: businessAccountID, DisplayPhoneNumber: string(raw.DisplayPhoneNumber),
		Event: raw.Event, CurrentLimit: raw.CurrentLimit, OldLimit: raw.OldLimit, Rating: raw.QualityRating, At: at}, nil
}

// ParseAccountAlert reads the value of an account_alerts change; at is the
// entry's time.
func ParseAccountAlert(businessAccountID string, at time.Time, value json.RawMessage) (domain.AccountAlert, error) {
	var raw struct {
		EntityType string       `json:"entity_type"`
		EntityID   payload.Text `json:"entity_id"`
		AlertInfo  struct {
			Severity    string `json:"alert_severity"`
			Status      string `json:"alert_status"`
			Type        string `json:"alert_type"`
			Description string `json:"alert_description"`
		} `json:"alert_info"`
	}
	if err := payload.DecodeField(value, &raw, FieldAccountAlerts); err != nil {
		return domain.AccountAlert{}, err
	}
	return domain.AccountAlert{BusinessAccountID: businessAccountID, EntityType: raw.EntityType, EntityID: string(raw.EntityID),
		Severity: raw.AlertInfo.Severity, Status: raw.AlertInfo.Status, Type: raw.AlertInfo.Type,
		Description: raw.AlertInfo.Description, At: at}, nil
}

// ParseAccountReview reads the decision of an account_review_update change.
func ParseAccountReview(value json.RawMessage) (string, error) {
	var raw struct {
		Decision string `json:"decision"`
	}
	if err := payload.DecodeField(value, &raw, FieldAccountReview); err != nil {
		return "", err
	}
	return raw.Decision, nil
}

// maxEpoch bounds epoch-second timestamps (the year 5138): a larger value
// is not a time the platform would send.
const maxEpoch = 1e11

// epoch is a time in epoch seconds, sent as a JSON number or a numeric
// string (messages and statuses send strings, entries numbers).
type epoch int64

// UnmarshalJSON accepts a number, a numeric string or null.
func (e *epoch) UnmarshalJSON(b []byte) error {
	var f payload.Text
	if err := f.UnmarshalJSON(b); err != nil {
		return err
	}
	s := strings.TrimSpace(string(f))
	if s == "" {
		*e = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxEpoch {
		return errors.New("timestamp must be epoch seconds")
	}
	*e = epoch(n)
	return nil
}

func (e epoch) time() time.Time {
	if e == 0 {
		return time.Time{}
	}
	return time.Unix(int64(e), 0).UTC()
}
