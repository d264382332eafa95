package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/openai"
)

// The adapter asks the model and reads its JSON; a rate limit is an error
// the caller may retry after the hint, and the conversation goes to a
// human meanwhile.
func ExampleClient_Answer() {
	// Stands in for https://api.openai.com/v1.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-example" {
			w.Header().Set("Retry-After", "20")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","refusal":null,`+
			`"content":"{\"answer\":\"Returns are accepted within 30 days.\",\"confidence\":0.85,\"sources\":[\"policy:returns\"]}"}}]}`)
	}))
	defer api.Close()
	q := concierge.Question{
		ShopName: "Linen & Co", Text: "Can I return a shirt?", FirstName: "Ada",
		Policies: map[string]string{concierge.PolicyReturns: "Returns within 30 days."},
	}

	c, err := openai.New(openai.Config{BaseURL: api.URL, APIKey: "sk-example", Model: "gpt-4o-mini"})
	if err != nil {
		panic(err)
	}
	a, err := c.Answer(context.Background(), q)
	fmt.Printf("%s %v %q %v\n", a.Text, a.Confidence, a.Sources, err)

	limited, _ := openai.New(openai.Config{BaseURL: api.URL, APIKey: "sk-other", Model: "gpt-4o-mini"})
	_, err = limited.Answer(context.Background(), q)
	var pe *concierge.ProviderError
	if errors.As(err, &pe) {
		fmt.Println(pe.Code, pe.Retryable, pe.RetryAfter)
	}
	// Output:
	// Returns are accepted within 30 days. 0.85 ["policy:returns"] <nil>
	// rate_limited true 20s
}
