package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/conciergetest"
	"github.com/cgp-platform/cgp/concierge/openai"
)

// fakeModel serves the chat-completions contract like a model that reads
// the shop data it was given: it cites the first order and a policy that
// does not exist, says it does not know when there is no order, and
// answers with malformed JSON when the customer's message is empty.
func fakeModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil || len(req.Messages) != 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		system, user := req.Messages[0].Content, req.Messages[1].Content
		var data struct {
			Orders []struct{ Name string } `json:"orders"`
		}
		_ = json.Unmarshal([]byte(system[strings.Index(system, "Shop data (JSON):\n")+len("Shop data (JSON):\n"):]), &data)
		content := `{"answer":"Sorry, I don't know.","confidence":0.1,"sources":[]}`
		switch {
		case strings.TrimSpace(user) == "":
			content = `{"answer": "`
		case len(data.Orders) > 0:
			content = `{"answer":"It is on its way.","confidence":0.8,"sources":["order:` + data.Orders[0].Name + `","policy:warranty"]}`
		}
		out, _ := json.Marshal(map[string]any{
			"object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClientConformance(t *testing.T) {
	conciergetest.Run(t, func(t *testing.T) concierge.Answerer {
		srv := fakeModel(t)
		c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: apiKey, Model: model})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}
