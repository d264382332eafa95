package email_test

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
)

func TestBuildRefusesWhatItCannotSendSafely(t *testing.T) {
	for _, tc := range []struct {
		field  string
		change func(*email.Message)
	}{
		{"from", func(m *email.Message) { m.From.Name = "Shop\r\nBcc: all@example.org" }},
		{"from", func(m *email.Message) { m.From.Address = "" }},
		{"to", func(m *email.Message) { m.To.Name = "Zoë\nBcc: all@example.org" }},
		{"to", func(m *email.Message) { m.To.Address = "zoe@example.org>\r\nBcc: all@example.org" }},
		{"to", func(m *email.Message) { m.To.Address = "Zoë <zoe@example.org>" }},
		{"to", func(m *email.Message) { m.To.Address = "zoë@example.org" }},
		{"to", func(m *email.Message) { m.To.Address = "zoe" }},
		{"to", func(m *email.Message) { m.To.Name = strings.Repeat("é", 150) }},
		{"reply_to", func(m *email.Message) { m.ReplyTo.Address = "care@" }},
		{"subject", func(m *email.Message) { m.Subject = "" }},
		{"subject", func(m *email.Message) { m.Subject = "Sale\rBcc: all@example.org" }},
		{"subject", func(m *email.Message) { m.Subject = strings.Repeat("a ", 1001) }},
		{"text", func(m *email.Message) { m.Text = "" }},
		{"date", func(m *email.Message) { m.Date = time.Time{} }},
		{"unsubscribe_url", func(m *email.Message) { m.UnsubscribeURL = "http://cgp.example/u/1" }},
		{"unsubscribe_url", func(m *email.Message) { m.UnsubscribeURL = "https://cgp.example/u/1>, <https://evil.example" }},
		{"unsubscribe_url", func(m *email.Message) { m.UnsubscribeURL = "https:///u/1" }},
		{"unsubscribe_mailto", func(m *email.Message) { m.UnsubscribeMailto = "unsubscribe@boutique.example" }},
		{"headers", func(m *email.Message) { m.Headers = map[string]string{"Bcc": "all@example.org"} }},
		{"headers", func(m *email.Message) { m.Headers = map[string]string{"X-Id: 1\r\nBcc": "x"} }},
		{"headers", func(m *email.Message) { m.Headers = map[string]string{"X-Service-Message-Id": "msg_1\nBcc: x"} }},
		{"message_id_domain", func(m *email.Message) { m.MessageIDDomain = "mail.cgp.example>" }},
	} {
		m := campaignMessage()
		tc.change(&m)
		raw, err := email.Build(m)
		var se *channels.SendError
		var fe *email.FieldError
		if !errors.As(err, &se) || se.Code != channels.CodeInvalidRequest || se.Retryable || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: built %d bytes, error %v", tc.field, len(raw), err)
		}
		if err != nil && strings.Contains(err.Error(), "example.org") {
			t.Errorf("%s: the error carries the value: %v", tc.field, err)
		}
	}
}

func TestBuildKeepsLongAndTrickySubjectsIntactWithinTheLineLimit(t *testing.T) {
	for _, subject := range []string{
		strings.Repeat("Les soldes d’été arrivent ", 40),
		strings.Repeat("x", 1500),
		"Literally =?utf-8?q?not_encoded?= text",
		"tab\tand  two spaces",
	} {
		m := campaignMessage()
		m.Subject = subject
		raw, err := email.Build(m)
		if err != nil {
			t.Fatal(err)
		}
		msg := parseChecked(t, raw)
		var dec mime.WordDecoder
		got, err := dec.DecodeHeader(msg.Header.Get("Subject"))
		if err != nil || normalSpace(got) != normalSpace(subject) {
			t.Errorf("subject %.30q… decodes to %.60q… (%v)", subject, got, err)
		}
	}
}

// parseChecked parses a built message after checking its lines: CRLF
// ends only, none longer than 998 octets.
func parseChecked(t *testing.T, raw []byte) *mail.Message {
	t.Helper()
	if !bytes.HasSuffix(raw, []byte("\r\n")) {
		t.Fatalf("the message does not end with CRLF")
	}
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 998 || bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("line %d: %d octets, or a bare CR or LF", i, len(line))
		}
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the message does not parse: %v", err)
	}
	return msg
}

func normalSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func normalLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimRight(strings.ReplaceAll(s, "\r", "\n"), "\n")
}

// builtHeaders are every header Build may write.
var builtHeaders = map[string]bool{
	"From": true, "To": true, "Reply-To": true, "Subject": true, "Date": true, "Message-Id": true,
	"List-Unsubscribe": true, "List-Unsubscribe-Post": true, "X-Service-Message-Id": true,
	"Mime-Version": true, "Content-Type": true, "Content-Transfer-Encoding": true,
}

// FuzzBuild: whatever the names, subject, bodies and extra header value,
// Build never panics; what it builds parses with net/mail, has CRLF lines
// of at most 998 octets, no header but its own (each once), and carries
// the inputs unchanged (up to whitespace in headers and line ends in
// bodies). It refuses only inputs with a line break or over a limit.
func FuzzBuild(f *testing.F) {
	m := campaignMessage()
	f.Add(m.From.Name, m.To.Name, m.Subject, m.Text, m.HTML, "msg_01HZX")
	f.Add("Eve\r\nBcc: x@y.z", "\"Zoë\" <a@b.c>", "subject\r\nBcc: evil@example.com", ".\r\n.\r\n", "", "x\nBcc: y")
	f.Add("", "", "=?utf-8?q?=0D=0ABcc:_x?=", "--boundary\r\n", "<a href=\"x\">é</a>\n.", "")
	f.Fuzz(func(t *testing.T, fromName, toName, subject, text, html, id string) {
		m := campaignMessage()
		m.From.Name, m.To.Name, m.Subject, m.Text, m.HTML = fromName, toName, subject, text, html
		m.Headers = map[string]string{"X-Service-Message-Id": id}
		raw, err := email.Build(m)
		if err != nil {
			var se *channels.SendError
			if !errors.As(err, &se) || se.Code != channels.CodeInvalidRequest {
				t.Fatalf("not an invalid_request: %v", err)
			}
			refusable := strings.ContainsAny(fromName+toName+subject+id, "\r\n") || subject == "" || text == "" ||
				len(fromName) > 200 || len(toName) > 200 || len(subject) > 2000 || len(id) > 2000
			if !refusable {
				t.Fatalf("refused a sendable message: %v", err)
			}
			return
		}
		msg := parseChecked(t, raw)
		for key, values := range msg.Header {
			if !builtHeaders[key] || len(values) != 1 {
				t.Fatalf("header %q ×%d", key, len(values))
			}
		}
		var dec mime.WordDecoder
		if got, err := dec.DecodeHeader(msg.Header.Get("Subject")); err != nil || normalSpace(got) != normalSpace(subject) {
			t.Fatalf("subject %q decodes to %q (%v)", subject, got, err)
		}
		if got, err := dec.DecodeHeader(msg.Header.Get("X-Service-Message-Id")); err != nil || normalSpace(got) != normalSpace(id) {
			t.Fatalf("message id %q decodes to %q (%v)", id, got, err)
		}
		to, err := msg.Header.AddressList("To")
		if err != nil || len(to) != 1 || to[0].Address != recipient {
			t.Fatalf("To %q: %v, %v", msg.Header.Get("To"), to, err)
		}
		if utf8.ValidString(toName) && normalSpace(to[0].Name) != normalSpace(toName) {
			t.Fatalf("To's name %q, want %q", to[0].Name, toName)
		}
		if _, err := msg.Header.AddressList("From"); err != nil {
			t.Fatalf("From %q: %v", msg.Header.Get("From"), err)
		}
		mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		if html == "" {
			b, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if err != nil || mediaType != "text/plain" {
				t.Fatalf("%s: %v", mediaType, err)
			}
			bodies = []string{string(b)}
		} else {
			mr := multipart.NewReader(msg.Body, params["boundary"])
			for {
				p, err := mr.NextPart() // decodes the quoted-printable
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(p)
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, string(b))
			}
		}
		want := []string{text}
		if html != "" {
			want = append(want, html)
		}
		if len(bodies) != len(want) {
			t.Fatalf("%d parts, want %d", len(bodies), len(want))
		}
		for i := range want {
			if normalLines(bodies[i]) != normalLines(want[i]) {
				t.Fatalf("part %d: %q, want %q", i, bodies[i], want[i])
			}
		}
	})
}
