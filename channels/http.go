package channels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Answer is a provider's HTTP answer, read whole (up to the limit given to
// PostJSON).
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// PostJSON posts body (JSON) to endpoint with the bearer token through hc,
// bounded by timeout, and reads the answer (at most limit bytes). A
// failure before an answer is a retryable SendError (TransportError); an
// answer cut short after a 2xx is a provider_error not retried (the
// message may have been accepted). provider names the client in the
// causes ("whatsapp", "sms"); the endpoint never appears in them.
func PostJSON(ctx context.Context, hc *http.Client, provider, endpoint, token string, body []byte, timeout time.Duration, limit int64) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Answer{}, NewSendError(CodeInvalidRequest, false, 0, errors.New(provider+": build request"))
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, TransportError(ctx, provider, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return Answer{}, NewSendError(CodeProviderError, false, resp.StatusCode, errors.New(provider+": answer cut short after acceptance"))
		}
		return Answer{}, TransportError(ctx, provider, err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: raw}, nil
}

// TransportError classifies a failure before any answer: a timeout (ours
// or the caller's deadline) or a cancelled context is a retryable
// timeout, anything else a retryable connect_failed. The cause keeps the
// error's kind, not the URL.
func TransportError(ctx context.Context, provider string, err error) *SendError {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return NewSendError(CodeTimeout, true, 0, fmt.Errorf("%s: %w", provider, ctxErr))
	}
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return NewSendError(CodeTimeout, true, 0, fmt.Errorf("%s: %w", provider, err))
	}
	return NewSendError(CodeConnectFailed, true, 0, fmt.Errorf("%s: %w", provider, err))
}

// ParseRetryAfter reads a Retry-After value, delta-seconds or an
// HTTP-date; 0 when absent, unreadable or in the past. It is capped at a
// day: a hint beyond that is not one the sending path should sleep on.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(min(secs, 86400)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}
