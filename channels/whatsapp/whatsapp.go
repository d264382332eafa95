package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
)

// DefaultBaseURL is the Graph API address with the version pinned. v26.0
// is the newest version Meta lists (released 2026-07-29, no end date yet);
// the Graph API changelog (developers.facebook.com/docs/graph-api/changelog)
// gives each version about two years. Moving to a newer version is a
// change of this constant and a look at that changelog.
const DefaultBaseURL = "https://graph.facebook.com/v26.0"

// DefaultTimeout bounds one send, from dialling to the end of the answer.
const DefaultTimeout = 15 * time.Second

// MaxTextBody is the documented maximum length of a text message's body,
// in characters.
const MaxTextBody = 4096

// maxResponse bounds how much of an answer is read: the documented bodies
// are well under a kilobyte.
const maxResponse = 1 << 20

// Config is the client's configuration; zero fields take their defaults.
type Config struct {
	// BaseURL is the Graph API address with its version, without a
	// trailing slash (default DefaultBaseURL). Tests point it at an
	// httptest server.
	BaseURL string
	// HTTP is the client the requests go through (default: a plain
	// client that does not follow redirects). The Graph API is a fixed
	// public host, not an address a shop chose, so the outbound guard
	// does not apply.
	HTTP *http.Client
	// Timeout bounds each send (default DefaultTimeout).
	Timeout time.Duration
	// Now is the clock that turns an HTTP-date Retry-After into a
	// duration (default time.Now).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	channels.ClientDefaults(&c.HTTP, &c.Timeout, DefaultTimeout, &c.Now)
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if !channels.ValidBaseURL(c.BaseURL) {
		errs = append(errs, errors.New("whatsapp: base URL must be an absolute http(s) URL without user info, query or fragment"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("whatsapp: timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Client sends messages through the WhatsApp Cloud API. It is safe for
// concurrent use; each call carries its own phone number id and token, so
// one client serves every shop.
type Client struct {
	cfg Config
}

// New returns a client for cfg with its defaults filled in.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// Sent is the provider's acceptance of a message.
type Sent struct {
	// MessageID is the provider's id (wamid.…) that the status webhooks
	// (sent, delivered, read, failed) carry.
	MessageID string
	// WAID is the recipient's WhatsApp id as the provider resolved it,
	// empty when the answer has none.
	WAID string
	// Status is messages[0].message_status when present ("accepted",
	// "held_for_quality_assessment"), empty otherwise.
	Status string
}

// Template is an approved message template and the values of its
// variables, as the documented template object carries them.
type Template struct {
	// Name is the template's name.
	Name string
	// Language is the template's language code ("en_US", "pt_BR").
	Language string
	// Header holds the header's text variable; the documentation allows
	// at most one.
	Header []string
	// Body holds the body's variables, {{1}} first.
	Body []string
	// Buttons holds the values of buttons that take one.
	Buttons []Button
	// CallbackData is sent as biz_opaque_callback_data (at most 512
	// characters): the platform returns it on the message's status
	// webhooks, so a sender that lost the answer learns the message
	// was sent.
	CallbackData string
}

// Button sub-types a template send can fill.
const (
	// ButtonURL is a URL button with a variable suffix; Param is the
	// suffix (a text parameter).
	ButtonURL = "url"
	// ButtonQuickReply is a quick-reply button; Param is the payload
	// returned when the customer taps it (a payload parameter).
	ButtonQuickReply = "quick_reply"
)

// Button is the value of one of a template's buttons.
type Button struct {
	// Index is the button's position in the template, 0 to 9.
	Index int
	// SubType is ButtonURL or ButtonQuickReply.
	SubType string
	// Param is the URL suffix or the quick-reply payload.
	Param string
}

// SendTemplate sends template t to the recipient to (E.164, with or
// without the leading +) from the business phone number phoneNumberID.
// Every failure is a *channels.SendError; invalid arguments are a
// non-retryable invalid_request and no request is made.
func (c *Client) SendTemplate(ctx context.Context, phoneNumberID, accessToken, to string, t Template) (Sent, error) {
	msisdn, err := checkCommon(phoneNumberID, accessToken, to)
	if err != nil {
		return Sent{}, err
	}
	tpl, err := templateObjectOf(t)
	if err != nil {
		return Sent{}, err
	}
	if utf8.RuneCountInString(t.CallbackData) > MaxCallbackData {
		return Sent{}, invalid(fmt.Sprintf("callback data has more than %d characters", MaxCallbackData))
	}
	return c.send(ctx, phoneNumberID, accessToken, request{
		MessagingProduct: "whatsapp",
		RecipientType:    "individual",
		To:               msisdn,
		Type:             "template",
		Template:         tpl,
		CallbackData:     t.CallbackData,
	})
}

// SendText sends a text message. The Cloud API delivers it only within
// the 24 hours after the customer's last message (error 131047
// otherwise). previewURL asks for a preview of the first URL in body.
func (c *Client) SendText(ctx context.Context, phoneNumberID, accessToken, to, body string, previewURL bool) (Sent, error) {
	return c.SendTextMessage(ctx, phoneNumberID, accessToken, to, Text{Body: body, PreviewURL: previewURL})
}

// Text is a text message: its body (1 to MaxTextBody characters),
// whether to preview its first URL, and the callback data the platform's
// status webhooks carry back (biz_opaque_callback_data, optional).
type Text struct {
	Body         string
	PreviewURL   bool
	CallbackData string
}

// SendTextMessage sends a text message with its callback data; see
// SendText.
func (c *Client) SendTextMessage(ctx context.Context, phoneNumberID, accessToken, to string, t Text) (Sent, error) {
	msisdn, err := checkCommon(phoneNumberID, accessToken, to)
	if err != nil {
		return Sent{}, err
	}
	body := t.Body
	if strings.TrimSpace(body) == "" {
		return Sent{}, invalid("body is empty")
	}
	if !utf8.ValidString(body) {
		return Sent{}, invalid("body is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(body); n > MaxTextBody {
		return Sent{}, invalid(fmt.Sprintf("body has %d characters, at most %d allowed", n, MaxTextBody))
	}
	if utf8.RuneCountInString(t.CallbackData) > MaxCallbackData {
		return Sent{}, invalid(fmt.Sprintf("callback data has more than %d characters", MaxCallbackData))
	}
	return c.send(ctx, phoneNumberID, accessToken, request{
		MessagingProduct: "whatsapp",
		RecipientType:    "individual",
		To:               msisdn,
		Type:             "text",
		Text:             &textObject{Body: body, PreviewURL: t.PreviewURL},
		CallbackData:     t.CallbackData,
	})
}

// The request body of POST /{phone-number-id}/messages.
type request struct {
	MessagingProduct string          `json:"messaging_product"`
	RecipientType    string          `json:"recipient_type"`
	To               string          `json:"to"`
	Type             string          `json:"type"`
	Template         *templateObject `json:"template,omitempty"`
	Text             *textObject     `json:"text,omitempty"`
	CallbackData     string          `json:"biz_opaque_callback_data,omitempty"`
}

// MaxCallbackData is the documented bound of biz_opaque_callback_data.
const MaxCallbackData = 512

type textObject struct {
	Body       string `json:"body"`
	PreviewURL bool   `json:"preview_url"`
}

type templateObject struct {
	Name       string      `json:"name"`
	Language   language    `json:"language"`
	Components []component `json:"components,omitempty"`
}

type language struct {
	Code string `json:"code"`
}

type component struct {
	Type       string      `json:"type"`
	SubType    string      `json:"sub_type,omitempty"`
	Index      string      `json:"index,omitempty"`
	Parameters []parameter `json:"parameters"`
}

type parameter struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Payload string `json:"payload,omitempty"`
}

func invalid(why string) *channels.SendError {
	return channels.NewSendError(channels.CodeInvalidRequest, false, 0, errors.New("whatsapp: "+why))
}

// checkCommon validates what every send takes and returns the recipient
// as the digits of its E.164 form. Messages name the field, never its
// value.
func checkCommon(phoneNumberID, accessToken, to string) (string, error) {
	if phoneNumberID == "" || !allDigits(phoneNumberID) {
		return "", invalid("phone number id must be the numeric id of the business phone number")
	}
	if accessToken == "" {
		return "", invalid("access token is empty")
	}
	for i := 0; i < len(accessToken); i++ {
		// A token is printable ASCII; anything else would fail in the
		// transport as if the network had, and be retried for ever.
		if accessToken[i] <= ' ' || accessToken[i] > '~' {
			return "", invalid("access token has a character outside printable ASCII")
		}
	}
	msisdn := strings.TrimPrefix(to, "+")
	// E.164: a country code and a subscriber number, at most 15 digits,
	// never starting with 0.
	if len(msisdn) < 7 || len(msisdn) > 15 || !allDigits(msisdn) || msisdn[0] == '0' {
		return "", invalid("recipient must be an E.164 number (7 to 15 digits, optional leading +)")
	}
	return msisdn, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func templateObjectOf(t Template) (*templateObject, error) {
	if strings.TrimSpace(t.Name) == "" {
		return nil, invalid("template name is empty")
	}
	if len(t.Name) > 512 {
		return nil, invalid("template name is longer than 512 characters")
	}
	if strings.TrimSpace(t.Language) == "" {
		return nil, invalid("template language is empty")
	}
	if len(t.Header) > 1 {
		return nil, invalid("template header takes at most one variable")
	}
	obj := &templateObject{Name: t.Name, Language: language{Code: t.Language}}
	textParams := func(part string, values []string) ([]parameter, error) {
		ps := make([]parameter, 0, len(values))
		for i, v := range values {
			if strings.TrimSpace(v) == "" {
				return nil, invalid(fmt.Sprintf("template %s variable %d is empty", part, i+1))
			}
			ps = append(ps, parameter{Type: "text", Text: v})
		}
		return ps, nil
	}
	if len(t.Header) > 0 {
		ps, err := textParams("header", t.Header)
		if err != nil {
			return nil, err
		}
		obj.Components = append(obj.Components, component{Type: "header", Parameters: ps})
	}
	if len(t.Body) > 0 {
		ps, err := textParams("body", t.Body)
		if err != nil {
			return nil, err
		}
		obj.Components = append(obj.Components, component{Type: "body", Parameters: ps})
	}
	seen := map[int]bool{}
	for _, b := range t.Buttons {
		if b.Index < 0 || b.Index > 9 {
			return nil, invalid("template button index must be 0 to 9")
		}
		if seen[b.Index] {
			return nil, invalid(fmt.Sprintf("template button %d is given twice", b.Index))
		}
		seen[b.Index] = true
		if strings.TrimSpace(b.Param) == "" {
			return nil, invalid(fmt.Sprintf("template button %d has an empty parameter", b.Index))
		}
		var p parameter
		switch b.SubType {
		case ButtonURL:
			p = parameter{Type: "text", Text: b.Param}
		case ButtonQuickReply:
			p = parameter{Type: "payload", Payload: b.Param}
		default:
			return nil, invalid(fmt.Sprintf("template button %d sub-type must be url or quick_reply", b.Index))
		}
		obj.Components = append(obj.Components, component{
			Type: "button", SubType: b.SubType, Index: strconv.Itoa(b.Index), Parameters: []parameter{p},
		})
	}
	return obj, nil
}

func (c *Client) send(ctx context.Context, phoneNumberID, accessToken string, body request) (Sent, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // URLs and texts go as written; the API reads JSON, not HTML
	if err := enc.Encode(body); err != nil {
		return Sent{}, channels.NewSendError(channels.CodeInvalidRequest, false, 0, fmt.Errorf("whatsapp: encode request: %w", err))
	}
	a, err := channels.PostJSON(ctx, c.cfg.HTTP, "whatsapp", c.cfg.BaseURL+"/"+phoneNumberID+"/messages", accessToken, buf.Bytes(),
		c.cfg.Timeout, maxResponse)
	if err != nil {
		return Sent{}, err
	}
	return parseResponse(a.Status, a.Header, a.Body, c.cfg.Now())
}
