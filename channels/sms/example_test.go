package sms_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/sms"
)

// A text to a customer; the answer's message id is what the delivery
// callbacks will carry. A failure tells the sending path whether to try
// again.
func ExampleClient_Send() {
	// Stands in for the provider's https://sms.provider.example.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer sk_live_example" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"unauthorized","message":"invalid API key"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"message_id":"SM7f3c2a9e4b1d4c6a8e0f","status":"queued"}`)
	}))
	defer api.Close()

	client, err := sms.New(sms.Config{BaseURL: api.URL, APIKey: "sk_live_example", From: "Boutique"})
	if err != nil {
		panic(err)
	}
	msg := sms.Message{
		To:              "+16505551234",
		Text:            "Your order #1001 has shipped.",
		CallbackURL:     "https://cgp.example/webhooks/providers/sms?token=cpt_example",
		ClientReference: "msg_01HZX",
	}
	sent, err := client.Send(context.Background(), msg)
	fmt.Println(sent.MessageID, sent.Status, sent.Segments, err)

	msg.To = "+1 650 555 1234"
	_, err = client.Send(context.Background(), msg)
	var se *channels.SendError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Retryable, err)
	}
	// Output:
	// SM7f3c2a9e4b1d4c6a8e0f queued 1 <nil>
	// invalid_request false send failed: invalid_request: sms: to: must be an E.164 number (+ then 7 to 15 digits, the first not 0)
}

func ExampleSegments() {
	fmt.Println(sms.Segments("Your order has shipped."))   // GSM-7
	fmt.Println(sms.Segments("Votre commande est partie")) // GSM-7
	fmt.Println(sms.Segments("Ваш заказ отправлен 📦"))     // UCS-2
	fmt.Println(sms.IsGSM7("Price: 10€"), sms.IsGSM7("Zoë"))
	// Output:
	// 1
	// 1
	// 1
	// true false
}
