package email_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
)

const recipient = "zoe.customer@example.org"

func campaignMessage() email.Message {
	return email.Message{
		From:              mail.Address{Name: "Boutique Élise", Address: "news@boutique.example"},
		To:                mail.Address{Name: "Zoë Müller", Address: recipient},
		ReplyTo:           mail.Address{Address: "care@boutique.example"},
		Subject:           "Déjà vu: 20 % off — ce week-end seulement",
		Text:              "Bonjour Zoë,\nnos soldes d'été commencent: ½ prix sur tout.\n",
		HTML:              "<p>Bonjour Zoë,</p><p>nos soldes d’été commencent: ½ prix sur tout.</p>",
		UnsubscribeURL:    "https://cgp.example/u/msg_01HZX?sig=abc",
		UnsubscribeMailto: "mailto:unsubscribe@boutique.example?subject=msg_01HZX",
		Headers:           map[string]string{"X-Service-Message-Id": "msg_01HZX"},
		Date:              time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC),
		MessageIDDomain:   "mail.cgp.example",
	}
}

func sendError(t *testing.T, err error) *channels.SendError {
	t.Helper()
	var se *channels.SendError
	if !errors.As(err, &se) {
		t.Fatalf("not a SendError: %v", err)
	}
	if strings.Contains(err.Error(), recipient) || strings.Contains(se.Code, "@") {
		t.Errorf("the error names the recipient: %v", err)
	}
	return se
}

func TestSendOverSTARTTLSWithAuthDeliversAMultipartMessage(t *testing.T) {
	serverTLS, clientTLS := testCerts(t)
	r, addr := startRelay(t, serverTLS)
	s := &email.Sender{Addr: addr, Username: "cgp", Password: "relay-password", TLSConfig: clientTLS,
		HeloName: "mx.cgp.example", Timeout: 30 * time.Second}
	sent, err := s.Send(context.Background(), campaignMessage())
	if err != nil {
		t.Fatal(err)
	}
	_, received := r.snapshot()
	if len(received) != 1 {
		t.Fatalf("relay received %d messages", len(received))
	}
	env := received[0]
	if !env.tls || env.user != "cgp" || env.mech != "PLAIN" || env.helo != "mx.cgp.example" {
		t.Errorf("tls %v, user %q, mechanism %q, helo %q", env.tls, env.user, env.mech, env.helo)
	}
	if env.from != "news@boutique.example" || len(env.to) != 1 || env.to[0] != recipient {
		t.Errorf("envelope from %q to %v", env.from, env.to)
	}

	msg, err := mail.ReadMessage(bytes.NewReader(env.data))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Boutique Élise" || from[0].Address != "news@boutique.example" {
		t.Errorf("From %q: %v %v", h.Get("From"), from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Name != "Zoë Müller" || to[0].Address != recipient {
		t.Errorf("To %q: %v %v", h.Get("To"), to, err)
	}
	if rt, err := h.AddressList("Reply-To"); err != nil || len(rt) != 1 || rt[0].Address != "care@boutique.example" {
		t.Errorf("Reply-To %q", h.Get("Reply-To"))
	}
	if raw := h.Get("Subject"); !strings.HasPrefix(raw, "=?utf-8?q?") {
		t.Errorf("Subject not Q-encoded: %q", raw)
	}
	var dec mime.WordDecoder
	if subject, err := dec.DecodeHeader(h.Get("Subject")); err != nil || subject != campaignMessage().Subject {
		t.Errorf("Subject decodes to %q (%v)", subject, err)
	}
	if date, err := h.Date(); err != nil || !date.Equal(campaignMessage().Date) {
		t.Errorf("Date %q: %v", h.Get("Date"), err)
	}
	if h.Get("Message-Id") != "<"+sent.MessageID+">" || !strings.HasSuffix(sent.MessageID, "@mail.cgp.example") ||
		len(sent.MessageID) < len("@mail.cgp.example")+16 {
		t.Errorf("Message-ID %q, sent %q", h.Get("Message-Id"), sent.MessageID)
	}
	if got := h.Get("List-Unsubscribe"); got != "<https://cgp.example/u/msg_01HZX?sig=abc>, <mailto:unsubscribe@boutique.example?subject=msg_01HZX>" {
		t.Errorf("List-Unsubscribe %q", got)
	}
	if got := h.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post %q", got)
	}
	if h.Get("X-Service-Message-Id") != "msg_01HZX" || h.Get("Mime-Version") != "1.0" {
		t.Errorf("X-Service-Message-Id %q, MIME-Version %q", h.Get("X-Service-Message-Id"), h.Get("Mime-Version"))
	}

	mediaType, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q", h.Get("Content-Type"))
	}
	parts := readParts(t, multipart.NewReader(msg.Body, params["boundary"]))
	if len(parts) != 2 || parts[0].contentType != "text/plain; charset=utf-8" || parts[1].contentType != "text/html; charset=utf-8" {
		t.Fatalf("parts %+v", parts)
	}
	if want := strings.ReplaceAll(campaignMessage().Text, "\n", "\r\n"); parts[0].body != want {
		t.Errorf("text part %q, want %q", parts[0].body, want)
	}
	if parts[1].body != campaignMessage().HTML {
		t.Errorf("html part %q", parts[1].body)
	}
	for i, line := range bytes.Split(env.data, []byte("\r\n")) {
		if len(line) > 998 || bytes.ContainsAny(line, "\r\n") {
			t.Errorf("line %d: %d octets or a bare line end", i, len(line))
		}
	}
}

type part struct{ contentType, body string }

// readParts reads raw parts (multipart.Reader.NextPart would decode the
// quoted-printable itself and drop the header that says so).
func readParts(t *testing.T, mr *multipart.Reader) []part {
	t.Helper()
	var parts []part
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		if cte := p.Header.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
			t.Errorf("part encoded %q", cte)
		}
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part{p.Header.Get("Content-Type"), string(body)})
	}
}

func TestSendToALoopbackRelayWithoutTLSSendsTextAlone(t *testing.T) {
	r, addr := startRelay(t, nil)
	m := campaignMessage()
	m.HTML, m.UnsubscribeURL, m.Headers = "", "", nil
	if _, err := (&email.Sender{Addr: addr, Timeout: 30 * time.Second}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	_, received := r.snapshot()
	if len(received) != 1 || received[0].tls || received[0].user != "" {
		t.Fatalf("received %+v", received)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(received[0].data))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	if h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("Content-Transfer-Encoding") != "quoted-printable" {
		t.Errorf("Content-Type %q, encoding %q", h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"))
	}
	if h.Get("List-Unsubscribe") != "<mailto:unsubscribe@boutique.example?subject=msg_01HZX>" || len(h["List-Unsubscribe-Post"]) != 0 {
		t.Errorf("a mailto alone is not one-click: %q, %q", h.Get("List-Unsubscribe"), h.Get("List-Unsubscribe-Post"))
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil || string(body) != strings.ReplaceAll(m.Text, "\n", "\r\n") {
		t.Errorf("body %q (%v)", body, err)
	}
}

func TestSendMapsTheRelaysRefusals(t *testing.T) {
	r, addr := startRelay(t, nil)
	s := &email.Sender{Addr: addr, Timeout: 30 * time.Second}
	for _, tc := range []struct {
		reply     *smtp.SMTPError
		code      string
		retryable bool
	}{
		{&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user " + recipient}, "smtp_550", false},
		{&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted " + recipient + ", try later"}, "smtp_451", true},
	} {
		r.mu.Lock()
		r.rcptErr = tc.reply
		r.mu.Unlock()
		_, err := s.Send(context.Background(), campaignMessage())
		se := sendError(t, err)
		if se.Code != tc.code || se.Retryable != tc.retryable || se.Status != tc.reply.Code {
			t.Errorf("%d: got %q retryable %v status %d", tc.reply.Code, se.Code, se.Retryable, se.Status)
		}
		if strings.Contains(err.Error(), "user") || strings.Contains(err.Error(), "greylisted") {
			t.Errorf("the error carries the relay's text: %v", err)
		}
	}
	if _, received := r.snapshot(); len(received) != 0 {
		t.Errorf("relay received %d messages", len(received))
	}
}

func TestSendFailsWithWrongCredentials(t *testing.T) {
	serverTLS, clientTLS := testCerts(t)
	_, addr := startRelay(t, serverTLS)
	s := &email.Sender{Addr: addr, Username: "cgp", Password: "wrong", TLSConfig: clientTLS, Timeout: 30 * time.Second}
	se := sendError(t, func() error { _, err := s.Send(context.Background(), campaignMessage()); return err }())
	if se.Code != "smtp_535" || se.Retryable {
		t.Errorf("got %q retryable %v", se.Code, se.Retryable)
	}
	if strings.Contains(se.Error(), "wrong") {
		t.Errorf("the error carries the password: %v", se)
	}
}

func TestSendRefusesACertificateItDoesNotTrust(t *testing.T) {
	serverTLS, _ := testCerts(t)
	r, addr := startRelay(t, serverTLS)
	_, err := (&email.Sender{Addr: addr, Timeout: 30 * time.Second}).Send(context.Background(), campaignMessage())
	if se := sendError(t, err); se.Code != email.CodeTLSFailed || !se.Retryable {
		t.Errorf("got %q retryable %v: %v", se.Code, se.Retryable, err)
	}
	if _, received := r.snapshot(); len(received) != 0 {
		t.Errorf("relay received %d messages", len(received))
	}
}

func TestSendToAClosedPortIsARetryableConnectFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = (&email.Sender{Addr: addr, Timeout: 30 * time.Second}).Send(context.Background(), campaignMessage())
	if se := sendError(t, err); se.Code != channels.CodeConnectFailed || !se.Retryable {
		t.Errorf("got %q retryable %v", se.Code, se.Retryable)
	}
}

func TestSendToASilentRelayTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c // holds the connection open without a greeting
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-accepted:
			c.Close()
		default:
		}
	})
	_, err = (&email.Sender{Addr: ln.Addr().String(), Timeout: 200 * time.Millisecond}).Send(context.Background(), campaignMessage())
	if se := sendError(t, err); se.Code != channels.CodeTimeout || !se.Retryable {
		t.Errorf("got %q retryable %v: %v", se.Code, se.Retryable, err)
	}
}

func TestSendRejectsALineBreakInTheSubjectWithoutConnecting(t *testing.T) {
	r, addr := startRelay(t, nil)
	m := campaignMessage()
	m.Subject = "Sale\r\nBcc: everyone@example.org"
	_, err := (&email.Sender{Addr: addr, Timeout: 30 * time.Second}).Send(context.Background(), m)
	se := sendError(t, err)
	var fe *email.FieldError
	if se.Code != channels.CodeInvalidRequest || se.Retryable || !errors.As(err, &fe) || fe.Field != "subject" {
		t.Errorf("got %q retryable %v: %v", se.Code, se.Retryable, err)
	}
	if sessions, _ := r.snapshot(); sessions != 0 {
		t.Errorf("the relay saw %d sessions", sessions)
	}
}

func TestSendWithCredentialsToARelayOfferingNoAUTHIsUnauthorized(t *testing.T) {
	r, addr := startRelay(t, nil) // go-smtp offers AUTH only over TLS
	s := &email.Sender{Addr: addr, Username: "cgp", Password: "relay-password", Timeout: 30 * time.Second}
	_, err := s.Send(context.Background(), campaignMessage())
	if se := sendError(t, err); se.Code != channels.CodeUnauthorized || se.Retryable {
		t.Errorf("got %q retryable %v", se.Code, se.Retryable)
	}
	if _, received := r.snapshot(); len(received) != 0 {
		t.Errorf("relay received %d messages", len(received))
	}
}
