package sending

import (
	"context"
	"html"
	"net/mail"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/channels/sms"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	"github.com/cgp-platform/cgp/domain"
)

// CodeNoAccount is the failure of a WhatsApp message of a shop with no
// connected account holding an access token (not retried).
const CodeNoAccount = "no_sending_account"

// Accounts returns a shop's WhatsApp sending account: its business phone
// number id and its access token, opened.
type Accounts interface {
	SendingAccount(ctx context.Context, shop string) (phoneNumberID, accessToken string, err error)
}

// WhatsApp sends WhatsApp template messages through the Cloud API, with
// the message id as biz_opaque_callback_data, and text messages (a
// conversation reply: a message with a text and no template) with the
// same callback data.
type WhatsApp struct {
	Client   *whatsapp.Client
	Accounts Accounts
}

// Send implements Channel.
func (w WhatsApp) Send(ctx context.Context, m Message) (string, string, error) {
	phone, token, err := w.Accounts.SendingAccount(ctx, m.Ref.ShopID)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return domain.ChannelWhatsApp, "", channels.NewSendError(CodeNoAccount, false, 0, err)
	}
	if err != nil {
		return domain.ChannelWhatsApp, "", err
	}
	if m.Template == "" && m.Text != "" {
		sent, err := w.Client.SendTextMessage(ctx, phone, token, m.To.Address, whatsapp.Text{Body: m.Text, CallbackData: m.Ref.MessageID})
		return domain.ChannelWhatsApp, sent.MessageID, err
	}
	sent, err := w.Client.SendTemplate(ctx, phone, token, m.To.Address, whatsapp.Template{Name: m.Template, Language: m.Language,
		Body: m.Parameters, CallbackData: m.Ref.MessageID})
	return domain.ChannelWhatsApp, sent.MessageID, err
}

// Email sends e-mails through an SMTP relay, from From (its name is the
// shop's name when From has none), with a one-click unsubscribe link for
// marketing and flow messages when Unsubscribe gives one.
type Email struct {
	Sender *email.Sender
	From   mail.Address
	// Unsubscribe returns the https unsubscribe URL of a message ("" for
	// none).
	Unsubscribe func(ref domain.MessageRef) string
	// Now stamps the Date header (time.Now when nil).
	Now func() time.Time
}

func (e Email) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Send implements Channel.
func (e Email) Send(ctx context.Context, m Message) (string, string, error) {
	from := e.From
	if from.Name == "" {
		from.Name = m.ShopName
	}
	msg := email.Message{From: from, To: mail.Address{Name: m.To.FirstName, Address: m.To.Address}, Subject: m.Subject,
		Text: m.Text, HTML: m.HTML, Headers: map[string]string{"X-Service-Message-Id": m.Ref.MessageID},
		Date: e.now(), MessageIDLocal: m.Ref.MessageID}
	if (m.Ref.Intent == domain.IntentMarketing || m.Ref.Flow != "") && e.Unsubscribe != nil {
		// Every marketing e-mail, and every built-in flow's (a review
		// request is transactional but still asks for something), carries
		// its unsubscribe link in its body;
		// the List-Unsubscribe header (RFC 8058 one-click) only when the
		// link is https, as mailbox providers require.
		link := e.Unsubscribe(m.Ref)
		msg.Text += "\r\n\r\n--\r\nUnsubscribe: " + link + "\r\n"
		if msg.HTML != "" {
			msg.HTML += `<p style="font-size:12px;color:#666"><a href="` + html.EscapeString(link) + `">Unsubscribe</a></p>`
		}
		if strings.HasPrefix(link, "https://") {
			msg.UnsubscribeURL = link
		}
	}
	sent, err := e.Sender.Send(ctx, msg)
	return "smtp", sent.MessageID, err
}

// SMS sends texts through the SMS provider, with the message id as the
// client reference its delivery callbacks carry back.
type SMS struct {
	Client *sms.Client
}

// Send implements Channel.
func (s SMS) Send(ctx context.Context, m Message) (string, string, error) {
	sent, err := s.Client.Send(ctx, sms.Message{To: m.To.Address, Text: m.Text, ClientReference: m.Ref.MessageID})
	return "sms", sent.MessageID, err
}
