package sms

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/channels"
)

// The contract's answer: {"message_id","status"} on success,
// {"error":{"code","message"}} on failure.
type response struct {
	MessageID string `json:"message_id"`
	Status    string `json:"status"`
	Error     *struct {
		Code string `json:"code"`
		// message is not read: it may echo the recipient or the text,
		// and it decides nothing.
	} `json:"error"`
}

// parseResponse turns an answer into a Sent with a message id or a
// *channels.SendError; it never fails otherwise, whatever the bytes.
// Retrying is decided by the status alone (408, 429 and 5xx), as the
// contract says; the provider's code, when a safe token, is the Code.
func parseResponse(status int, header http.Header, raw []byte, now time.Time) (Sent, error) {
	var r response
	parsed := json.Unmarshal(raw, &r) == nil
	if status >= 200 && status < 300 {
		if parsed && r.Error == nil && validID(r.MessageID) {
			return Sent{MessageID: r.MessageID, Status: safeCode(strings.ToLower(r.Status))}, nil
		}
		// Accepted, perhaps, but without an id to follow: retrying could
		// reach the customer twice, so the sending path records a failure.
		return Sent{}, channels.NewSendError(channels.CodeProviderError, false, status,
			fmt.Errorf("sms: http %d without a message id", status))
	}
	retry := status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
	var code string
	switch {
	case status == http.StatusTooManyRequests:
		code = channels.CodeRateLimited
	case status == http.StatusRequestTimeout:
		code = channels.CodeTimeout
	case status >= 500:
		code = channels.CodeProviderError
	case status == http.StatusUnauthorized:
		code = channels.CodeUnauthorized
	case status >= 400:
		code = channels.CodeRejected
	default: // 1xx, 3xx: not the contract (a redirect is not followed)
		code = channels.CodeProviderError
	}
	cause := fmt.Sprintf("sms: http %d", status)
	if parsed && r.Error != nil {
		if c := safeCode(r.Error.Code); c != "" && status >= 400 {
			code = c
			cause += ", error code " + c
		}
	} else {
		cause += " without the contract's error"
	}
	se := channels.NewSendError(code, retry, status, errorString(cause))
	se.RetryAfter = channels.ParseRetryAfter(header.Get("Retry-After"), now)
	return Sent{}, se
}

type errorString string

func (e errorString) Error() string { return string(e) }

// validID accepts a message id that is safe to store and compare: 1 to
// 256 printable ASCII characters without spaces.
func validID(id string) bool {
	return id != "" && len(id) <= 256 && channels.PrintableASCII(id)
}

// safeCode keeps a provider's code or status only when it is 1 to 64
// lowercase letters, digits, '_' or '.', so that no free text reaches a
// log or an error.
func safeCode(s string) string {
	if len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return ""
		}
	}
	return s
}
