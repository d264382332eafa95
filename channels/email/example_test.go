package email_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"time"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
)

func ExampleBuild() {
	raw, err := email.Build(email.Message{
		From:           mail.Address{Name: "Boutique Élise", Address: "news@boutique.example"},
		To:             mail.Address{Address: "zoe@example.org"},
		Subject:        "Nos soldes d’été",
		Text:           "Bonjour,\nles soldes commencent.",
		HTML:           "<p>Bonjour,</p><p>les soldes commencent.</p>",
		UnsubscribeURL: "https://cgp.example/u/msg_1",
		Headers:        map[string]string{"X-Service-Message-Id": "msg_1"},
		Date:           time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg, _ := mail.ReadMessage(bytes.NewReader(raw))
	for _, h := range []string{"From", "Subject", "List-Unsubscribe", "List-Unsubscribe-Post", "X-Service-Message-Id"} {
		fmt.Printf("%s: %s\n", h, msg.Header.Get(h))
	}

	_, err = email.Build(email.Message{From: mail.Address{Address: "news@boutique.example"},
		To: mail.Address{Address: "zoe@example.org"}, Subject: "Hi\r\nBcc: everyone@example.org", Text: "x",
		Date: time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)})
	fmt.Println(err)
	// Output:
	// From: =?utf-8?b?Qm91dGlxdWUgw4lsaXNl?= <news@boutique.example>
	// Subject: =?utf-8?q?Nos_soldes_d=E2=80=99=C3=A9t=C3=A9?=
	// List-Unsubscribe: <https://cgp.example/u/msg_1>
	// List-Unsubscribe-Post: List-Unsubscribe=One-Click
	// X-Service-Message-Id: msg_1
	// send failed: invalid_request: subject: holds a line break
}

// A sending path submits through a Sender and lets the SendError decide
// between a retry and a failure for good.
func ExampleSender_Send() {
	s := &email.Sender{Addr: "smtp.relay.example:587", Username: "cgp", Password: "…", HeloName: "mx.cgp.example",
		Timeout: 30 * time.Second}
	sent, err := s.Send(context.Background(), email.Message{
		From:    mail.Address{Name: "Boutique", Address: "news@boutique.example"},
		To:      mail.Address{Address: "zoe@example.org"},
		Subject: "Your order has shipped",
		Text:    "It is on its way.",
		Date:    time.Now(),
	})
	var se *channels.SendError
	switch {
	case err == nil:
		fmt.Println("accepted as", sent.MessageID)
	case errors.As(err, &se) && se.Retryable:
		fmt.Println("retry later:", se.Code) // smtp_451, timeout, connect_failed, …
	default:
		fmt.Println("failed for good:", channels.Classify(err).Code) // smtp_550, invalid_request, …
	}
}
