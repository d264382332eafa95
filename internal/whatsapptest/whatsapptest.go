// Package whatsapptest serves the WhatsApp Cloud API's documented send
// contract (POST /{phone-number-id}/messages with a bearer token) from an
// httptest server: it records every message it accepts, answers with a
// documented success body (a fresh wamid per message) or with the
// documented error payloads when told to, and reports each accepted
// message to a callback, as the platform's status webhooks do. It is the
// third-party API's contract, served for tests and benchmarks; the code
// under test is the real client.
//
// It imports the standard library only.
package whatsapptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Sent is a message the API accepted.
type Sent struct {
	PhoneNumberID, Token, To string
	// Template and Language name the template; Parameters are its body
	// parameters' texts.
	Template, Language string
	Parameters         []string
	// CallbackData is the request's biz_opaque_callback_data.
	CallbackData string
	// Type is the message type (template, text); Text is a text
	// message's body.
	Type, Text string
	// WAMID is the id answered.
	WAMID string
}

// Failure is an answer the server gives instead of accepting.
type Failure struct {
	Status int
	// Code is the Graph error code (131026, 130429, …).
	Code       int
	Message    string
	RetryAfter string
}

// Server is the contract server.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	sent     []Sent
	count    int
	seq      int
	fail     func(Sent) *Failure
	accepted func(Sent)
	changed  chan struct{}
	keep     bool
	waiting  int
}

// Options configure New.
type Options struct {
	// CountOnly keeps only the number of accepted messages (benchmarks).
	CountOnly bool
}

// New starts a server; Close stops it.
func New(o Options) *Server {
	s := &Server{changed: make(chan struct{}), keep: !o.CountOnly}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// FailWith makes the server answer f(sent) instead of accepting when it
// returns non-nil (nil f: accept everything).
func (s *Server) FailWith(f func(Sent) *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// OnAccepted calls f (in the request's goroutine, after answering) for
// every accepted message.
func (s *Server) OnAccepted(f func(Sent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted = f
}

// Sent returns the accepted messages.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Count is the number of accepted messages.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// WaitCount waits until at least n messages were accepted or ctx ends.
func (s *Server) WaitCount(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		c, ch := s.count, s.changed
		s.mu.Unlock()
		if c >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages: %w", c, n, ctx.Err())
		case <-ch:
		}
	}
}

type request struct {
	MessagingProduct string `json:"messaging_product"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Template         *struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
		Components []struct {
			Type       string `json:"type"`
			Parameters []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"parameters"`
		} `json:"components"`
	} `json:"template"`
	CallbackData string `json:"biz_opaque_callback_data"`
	Text         *struct {
		Body string `json:"body"`
	} `json:"text"`
}

// Waiting is the number of requests being answered (held by a FailWith
// function that blocks, for instance).
func (s *Server) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if r.Method != http.MethodPost || len(parts) < 2 || parts[len(parts)-1] != "messages" {
		writeError(w, Failure{Status: http.StatusBadRequest, Code: 100, Message: "Unsupported request"})
		return
	}
	if !ok || token == "" {
		writeError(w, Failure{Status: http.StatusUnauthorized, Code: 190, Message: "Invalid OAuth access token"})
		return
	}
	var req request
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil || req.MessagingProduct != "whatsapp" || req.To == "" {
		writeError(w, Failure{Status: http.StatusBadRequest, Code: 100, Message: "Invalid parameter"})
		return
	}
	m := Sent{PhoneNumberID: parts[len(parts)-2], Token: token, To: req.To, CallbackData: req.CallbackData, Type: req.Type}
	if req.Text != nil {
		m.Text = req.Text.Body
	}
	if req.Template != nil {
		m.Template, m.Language = req.Template.Name, req.Template.Language.Code
		for _, c := range req.Template.Components {
			if c.Type == "body" {
				for _, p := range c.Parameters {
					m.Parameters = append(m.Parameters, p.Text)
				}
			}
		}
	}
	s.mu.Lock()
	fail, accepted := s.fail, s.accepted
	s.mu.Unlock()
	if fail != nil {
		if f := fail(m); f != nil {
			writeError(w, *f)
			return
		}
	}
	s.mu.Lock()
	s.seq++
	m.WAMID = fmt.Sprintf("wamid.TEST%012d", s.seq)
	if s.keep {
		s.sent = append(s.sent, m)
	}
	s.count++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []map[string]string{{"input": req.To, "wa_id": strings.TrimPrefix(req.To, "+")}},
		"messages":          []map[string]string{{"id": m.WAMID, "message_status": "accepted"}},
	})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if accepted != nil {
		accepted(m)
	}
}

// writeError answers the documented Graph error payload.
func writeError(w http.ResponseWriter, f Failure) {
	w.Header().Set("Content-Type", "application/json")
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": f.Message, "type": "OAuthException", "code": f.Code, "fbtrace_id": "AbCdEf123",
		"error_data": map[string]any{"messaging_product": "whatsapp", "details": f.Message},
	}})
}
