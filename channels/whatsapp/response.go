package whatsapp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/channels"
)

// retryable classifies the Cloud API's error codes. Source: Meta, "WhatsApp
// error codes" (developers.facebook.com/documentation/business-messaging/
// whatsapp/support/error-codes/, updated 2026-06-18), which says to build
// error handling on `code` (and `details`), not on the HTTP status or the
// deprecated error_subcode. The HTTP status in each line is the one that
// page gives.
//
//	code        title (HTTP)                                     retry
//	0           AuthException (401)                              no: new token needed
//	3           API Method, capability or permissions (500)      no
//	10          Permission denied (403)                          no
//	190         Access token has expired (401)                   no
//	200-299     API Permission (403)                             no
//	4           API Too Many Calls (400)                         yes: app rate limit
//	80007       Rate limit issues, WABA limit reached (400)      yes
//	130429      Rate limit hit, throughput reached (400)         yes
//	131048      Spam rate limit hit (400)                        yes, later: quality-based limit
//	131056      (Business, Consumer) pair rate limit hit (400)   yes: same recipient too often
//	368         Temporarily blocked for policy violations (403)  no
//	131031      Account has been locked (403)                    no
//	1           API Unknown (400)                                by HTTP status
//	2           API Service, downtime or overload (503)          yes
//	100         Invalid parameter (400)                          no
//	130472      User's number is part of an experiment (400)     no
//	131000      Something went wrong (500)                       yes
//	131005      Access denied (403)                              no
//	131008      Required parameter is missing (400)              no
//	131009      Parameter value is not valid (400)               no
//	131016      Service unavailable (500)                        yes
//	131021      Recipient cannot be sender (400)                 no
//	131026      Message undeliverable (400)                      no: not on WhatsApp, old client, terms not accepted
//	131042      Business eligibility payment issue (400)         no
//	131047      Re-engagement message, over 24 h (400)           no: only a template can reach them
//	131051      Unsupported message type (400)                   no
//	131057      Account in maintenance mode (500)                yes
//	132000      Template param count mismatch (400)              no
//	132001      Template does not exist (404)                    no
//	132005      Template hydrated text too long (400)            no
//	132007      Template format character policy violated (400)  no
//	132012      Template parameter format mismatch (400)         no
//	132015      Template is paused, low quality (400)            no
//	132016      Template is disabled (400)                       no
//	133004      Server temporarily unavailable (503)             yes
//	133010      Phone number not registered (400)                no
//
// A code not in the table is retried when the HTTP status is 429 or 5xx.
var retryable = map[int64]bool{
	0: false, 3: false, 10: false, 190: false,
	4: true, 80007: true, 130429: true, 131048: true, 131056: true,
	368: false, 131031: false,
	2: true, 100: false, 130472: false, 131000: true, 131005: false, 131008: false,
	131009: false, 131016: true, 131021: false, 131026: false, 131042: false,
	131047: false, 131051: false, 131057: true,
	132000: false, 132001: false, 132005: false, 132007: false, 132012: false,
	132015: false, 132016: false,
	133004: true, 133010: false,
}

func retryableCode(code int64, status int) bool {
	if r, ok := retryable[code]; ok {
		return r
	}
	if code >= 200 && code <= 299 { // API Permission
		return false
	}
	return status == http.StatusTooManyRequests || status >= 500
}

// The documented answer of POST /{phone-number-id}/messages, success or
// Graph API error.
type response struct {
	Contacts []struct {
		WAID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []struct {
		ID            string `json:"id"`
		MessageStatus string `json:"message_status"`
	} `json:"messages"`
	Error *struct {
		Code    number `json:"code"`
		Subcode number `json:"error_subcode"`
		Type    string `json:"type"`
		// message, error_data.details and fbtrace_id are not read: the
		// first two may echo the recipient, and none of them decides.
	} `json:"error"`
}

// number is a non-negative integer the Graph API sends as a JSON number
// (some intermediaries send it as a string). Anything else leaves it
// unset rather than failing the whole answer.
type number struct {
	v  int64
	ok bool
}

func (n *number) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(bytes.TrimSpace(b)), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil && v >= 0 {
		*n = number{v: v, ok: true}
	}
	return nil
}

// parseResponse turns an answer into a Sent with a message id or a
// *channels.SendError; it never fails otherwise, whatever the bytes.
func parseResponse(status int, header http.Header, raw []byte, now time.Time) (Sent, error) {
	var r response
	parsed := json.Unmarshal(raw, &r) == nil
	if status >= 200 && status < 300 {
		if parsed && r.Error == nil && len(r.Messages) > 0 && validID(r.Messages[0].ID) {
			s := Sent{MessageID: r.Messages[0].ID, Status: safeWord(r.Messages[0].MessageStatus)}
			if len(r.Contacts) > 0 {
				s.WAID = safeWord(r.Contacts[0].WAID)
			}
			return s, nil
		}
		// Accepted, perhaps, but without an id to follow: retrying could
		// reach the customer twice, so the sending path records a failure.
		return Sent{}, channels.NewSendError(channels.CodeProviderError, false, status,
			fmt.Errorf("whatsapp: http %d without a message id", status))
	}
	retryAfter := channels.ParseRetryAfter(header.Get("Retry-After"), now)
	if parsed && r.Error != nil && r.Error.Code.ok {
		e := r.Error
		cause := fmt.Sprintf("whatsapp: http %d, error code %d", status, e.Code.v)
		if e.Subcode.ok {
			cause += fmt.Sprintf(", subcode %d", e.Subcode.v)
		}
		if t := safeWord(e.Type); t != "" {
			cause += ", type " + t
		}
		se := channels.NewSendError(strconv.FormatInt(e.Code.v, 10), retryableCode(e.Code.v, status), status, errorString(cause))
		se.RetryAfter = retryAfter
		return Sent{}, se
	}
	var se *channels.SendError
	cause := errorString(fmt.Sprintf("whatsapp: http %d without a Graph API error", status))
	switch {
	case status == http.StatusTooManyRequests:
		se = channels.NewSendError(channels.CodeRateLimited, true, status, cause)
	case status == http.StatusRequestTimeout:
		se = channels.NewSendError(channels.CodeTimeout, true, status, cause)
	case status >= 500:
		se = channels.NewSendError(channels.CodeProviderError, true, status, cause)
	case status == http.StatusUnauthorized:
		se = channels.NewSendError(channels.CodeUnauthorized, false, status, cause)
	case status >= 400:
		se = channels.NewSendError(channels.CodeRejected, false, status, cause)
	default: // 1xx, 3xx: not the documented API (a redirect is not followed)
		se = channels.NewSendError(channels.CodeProviderError, false, status, cause)
	}
	se.RetryAfter = retryAfter
	return Sent{}, se
}

type errorString string

func (e errorString) Error() string { return string(e) }

// validID accepts a message id that is safe to store and compare: 1 to
// 256 printable ASCII characters without spaces (wamid.… is base64).
func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// safeWord keeps a short token of the provider's (a status, a type, a
// WhatsApp id) only when it is letters, digits, '_' or '.', so that no
// free text reaches a log or an error.
func safeWord(s string) string {
	if len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return ""
		}
	}
	return s
}
