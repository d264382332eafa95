package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/whatsapp"
)

// A template message to a customer; the answer's message id is what the
// status webhooks will carry. A failure tells the sending path whether to
// try again.
func ExampleClient_SendTemplate() {
	// Stands in for https://graph.facebook.com/v26.0.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer EAAG-example" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190,"fbtrace_id":"A1"}}`)
			return
		}
		fmt.Fprint(w, `{"messaging_product":"whatsapp","contacts":[{"input":"+16505551234","wa_id":"16505551234"}],`+
			`"messages":[{"id":"wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA","message_status":"accepted"}]}`)
	}))
	defer api.Close()

	client, err := whatsapp.New(whatsapp.Config{BaseURL: api.URL})
	if err != nil {
		panic(err)
	}
	review := whatsapp.Template{Name: "review_request", Language: "en_US", Body: []string{"Ada", "Linen shirt"}}

	sent, err := client.SendTemplate(context.Background(), "106540352242922", "EAAG-example", "+16505551234", review)
	fmt.Println(sent.MessageID, sent.Status, err)

	_, err = client.SendTemplate(context.Background(), "106540352242922", "EAAG-revoked", "+16505551234", review)
	var se *channels.SendError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Retryable, se.Status)
	}
	// Output:
	// wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA accepted <nil>
	// 190 false 401
}
