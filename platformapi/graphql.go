package platformapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// GraphQL runs query with variables on shop's Admin GraphQL API with the
// access token and decodes the answer's data into out. Top-level errors
// are an *Error (THROTTLED retryable, ACCESS_DENIED naming the scope
// problem); a mutation's userErrors are the caller's to read (see
// UserErrors).
func (c *Client) GraphQL(ctx context.Context, shop, accessToken, query string, variables map[string]any, out any) error {
	h := http.Header{}
	h.Set("X-Shopify-Access-Token", accessToken)
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	body := map[string]any{"query": query}
	if variables != nil {
		body["variables"] = variables
	}
	if err := c.post(ctx, shop, "/admin/api/"+c.cfg.APIVersion+"/graphql.json", h, body, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		e := &Error{Status: http.StatusOK, Code: resp.Errors[0].Extensions.Code, Message: resp.Errors[0].Message}
		if len(e.Message) > 300 {
			e.Message = e.Message[:300]
		}
		if e.Code == "THROTTLED" || e.Code == "INTERNAL_SERVER_ERROR" {
			e.Retryable = true
		}
		return e
	}
	if len(resp.Data) == 0 || string(resp.Data) == "null" {
		return &Error{Status: http.StatusOK, Code: "bad_response", Message: "the answer has no data"}
	}
	if err := json.Unmarshal(resp.Data, out); err != nil {
		return &Error{Status: http.StatusOK, Code: "bad_response", Message: "the answer's data is not the documented shape", err: err}
	}
	return nil
}

// UserErrors returns an *Error for a mutation's userErrors, nil when
// there are none.
func UserErrors(errs []UserError) error {
	if len(errs) == 0 {
		return nil
	}
	return &Error{Status: http.StatusOK, Code: "user_errors", Message: errs[0].Message, UserErrors: errs}
}

// WebhookTopicEnum is the Admin API's name of a webhook topic
// (orders/create → ORDERS_CREATE).
func WebhookTopicEnum(topic string) string {
	return strings.ToUpper(strings.NewReplacer("/", "_", ".", "_").Replace(topic))
}

const webhookCreate = `mutation webhookSubscriptionCreate($topic: WebhookSubscriptionTopic!, $webhookSubscription: WebhookSubscriptionInput!) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: $webhookSubscription) {
    webhookSubscription { id }
    userErrors { field message }
  }
}`

// RegisterWebhook subscribes the app to topic on shop, delivered to uri
// as JSON. A subscription the shop already has for the topic and address
// counts as registered (the platform answers a userError "Address for
// this topic has already been taken"); it returns the subscription's id
// when the platform created one.
func (c *Client) RegisterWebhook(ctx context.Context, shop, accessToken, topic, uri string) (string, error) {
	var out struct {
		WebhookSubscriptionCreate struct {
			WebhookSubscription *struct {
				ID string `json:"id"`
			} `json:"webhookSubscription"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"webhookSubscriptionCreate"`
	}
	err := c.GraphQL(ctx, shop, accessToken, webhookCreate, map[string]any{
		"topic":               WebhookTopicEnum(topic),
		"webhookSubscription": map[string]any{"uri": uri, "format": "JSON"},
	}, &out)
	if err != nil {
		return "", err
	}
	r := out.WebhookSubscriptionCreate
	if len(r.UserErrors) > 0 {
		for _, u := range r.UserErrors {
			if strings.Contains(strings.ToLower(u.Message), "already been taken") {
				return "", nil
			}
		}
		return "", UserErrors(r.UserErrors)
	}
	if r.WebhookSubscription == nil {
		return "", &Error{Status: http.StatusOK, Code: "bad_response", Message: "no subscription and no userErrors"}
	}
	return r.WebhookSubscription.ID, nil
}
