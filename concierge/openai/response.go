package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/concierge"
)

// MaxAnswerRunes bounds a model's answer: the longest text message the
// messaging channels take (WhatsApp's 4,096 characters). A longer answer
// is not usable as it is, so it is an invalid output.
const MaxAnswerRunes = 4096

// UnansweredBelow is the model confidence under which its answer counts
// as an "I don't know" (concierge.Answer.Unanswered): the prompt asks for
// less than 0.3 then; 0.5 leaves the model some slack.
const UnansweredBelow = 0.5

// The documented chat completion object, the part of it that is read.
type completion struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// The documented error body: {"error": {"message", "type", "param",
// "code"}}. message is not read: it may echo the request.
type errorBody struct {
	Error *struct {
		Type string          `json:"type"`
		Code json.RawMessage `json:"code"`
	} `json:"error"`
}

// modelAnswer is the JSON the system prompt asks the model for.
type modelAnswer struct {
	Answer     *string  `json:"answer"`
	Confidence *float64 `json:"confidence"`
	Sources    []string `json:"sources"`
}

// parseResponse turns a response into an Answer or a
// *concierge.ProviderError; it never fails otherwise, whatever the bytes.
func parseResponse(status int, header http.Header, raw []byte, q concierge.Question, now time.Time) (concierge.Answer, error) {
	if status >= 200 && status < 300 {
		var c completion
		if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) == 0 {
			// Not a chat completion at all: the provider (or a proxy in
			// front of it) misbehaves. Not retried: the request may have
			// been billed, and the conversation goes to a human anyway.
			return concierge.Answer{}, concierge.NewProviderError(concierge.CodeInvalidResponse, false, status,
				errors.New("http 2xx without a chat completion"))
		}
		choice := c.Choices[0]
		switch {
		case choice.FinishReason == "length", choice.FinishReason == "content_filter":
			// Cut short: JSON mode's output may be an unterminated object.
			return invalidOutput(), nil
		case choice.Message.Refusal != nil && *choice.Message.Refusal != "":
			return invalidOutput(), nil
		case choice.Message.Content == nil:
			return invalidOutput(), nil
		}
		return ParseContent(*choice.Message.Content, q), nil
	}
	retryAfter := channels.ParseRetryAfter(header.Get("Retry-After"), now)
	var eb errorBody
	_ = json.Unmarshal(raw, &eb) // an unreadable body leaves the status to decide
	errType, errCode := "", ""
	if eb.Error != nil {
		errType = safeWord(eb.Error.Type)
		var s string
		if json.Unmarshal(eb.Error.Code, &s) == nil {
			errCode = safeWord(s)
		}
	}
	cause := fmt.Errorf("http %d", status)
	if errType != "" || errCode != "" {
		cause = fmt.Errorf("http %d, error type %q, code %q", status, errType, errCode)
	}
	var pe *concierge.ProviderError
	switch {
	case status == http.StatusTooManyRequests && (errType == "insufficient_quota" || errCode == "insufficient_quota" ||
		errCode == "credit_balance_exhausted" || errCode == "billing_hard_limit_reached"):
		// Out of credits: waiting does not help, the operator must act.
		pe = concierge.NewProviderError(concierge.CodeQuotaExhausted, false, status, cause)
	case status == http.StatusTooManyRequests:
		pe = concierge.NewProviderError(concierge.CodeRateLimited, true, status, cause)
	case status == http.StatusRequestTimeout:
		pe = concierge.NewProviderError(concierge.CodeTimeout, true, status, cause)
	case status == http.StatusConflict, status >= 500:
		pe = concierge.NewProviderError(concierge.CodeProviderError, true, status, cause)
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		pe = concierge.NewProviderError(concierge.CodeUnauthorized, false, status, cause)
	case status >= 400:
		pe = concierge.NewProviderError(concierge.CodeRejected, false, status, cause)
	default: // 1xx, 3xx: not the documented API (a redirect is not followed)
		pe = concierge.NewProviderError(concierge.CodeProviderError, false, status, cause)
	}
	if pe.Retryable {
		pe.RetryAfter = retryAfter
	}
	return concierge.Answer{}, pe
}

// ParseContent reads the model's message content, the JSON object the
// system prompt asks for, into an Answer for q. Anything but that object
// with a non-empty answer of at most MaxAnswerRunes and a confidence
// within [0, 1] is an invalid output (no text, confidence 0, escalation
// concierge.ReasonInvalidOutput). Sources not in q's data are dropped,
// duplicates too.
func ParseContent(content string, q concierge.Question) concierge.Answer {
	dec := json.NewDecoder(strings.NewReader(content))
	var m modelAnswer
	if err := dec.Decode(&m); err != nil {
		return invalidOutput()
	}
	if _, err := dec.Token(); err == nil {
		return invalidOutput() // trailing data after the object
	}
	if m.Answer == nil || m.Confidence == nil {
		return invalidOutput()
	}
	text := strings.TrimSpace(*m.Answer)
	conf := *m.Confidence
	if text == "" || !utf8.ValidString(text) || utf8.RuneCountInString(text) > MaxAnswerRunes ||
		math.IsNaN(conf) || conf < 0 || conf > 1 {
		return invalidOutput()
	}
	known := q.KnownSources()
	var sources []string
	for _, s := range m.Sources {
		s = strings.TrimSpace(s)
		if slices.Contains(known, s) && !slices.Contains(sources, s) {
			sources = append(sources, s)
		}
	}
	return concierge.Answer{Text: text, Confidence: conf, Sources: sources, Unanswered: conf < UnansweredBelow}
}

func invalidOutput() concierge.Answer {
	return concierge.Answer{Confidence: 0, Escalation: concierge.ReasonInvalidOutput, Unanswered: true}
}

// safeWord keeps a short token of the provider's (an error type or code)
// only when it is letters, digits, '_', '-' or '.', so that no free text
// reaches a log or an error.
func safeWord(s string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return ""
	}
	if strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')
	}) >= 0 {
		return ""
	}
	return s
}
