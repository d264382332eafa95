package email_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
)

// mixedPart is one part of a multipart/mixed message, its content
// decoded by its Content-Transfer-Encoding.
type mixedPart struct {
	header  map[string][]string
	content []byte
}

// readMixed checks that raw is a multipart/mixed message and returns its
// parts, decoded.
func readMixed(t *testing.T, raw []byte) []mixedPart {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/mixed" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	if msg.Header.Get("Content-Transfer-Encoding") != "" {
		t.Errorf("a multipart message with a Content-Transfer-Encoding")
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mixedPart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = p
		switch p.Header.Get("Content-Transfer-Encoding") {
		case "base64":
			r = newBase64Reader(p)
		case "quoted-printable":
			r = quotedprintable.NewReader(p)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, mixedPart{header: p.Header, content: b})
	}
}

func TestSendDeliversAttachmentsAfterTheAlternativeBody(t *testing.T) {
	r, addr := startRelay(t, nil)
	export := bytes.Repeat([]byte(`{"format_version":1,"events":["é"]}`), 40) // several base64 lines
	m := campaignMessage()
	m.Attachments = []email.Attachment{
		{Filename: "data-request-gdr_1.json", ContentType: "application/json", Data: export},
		{Filename: "reçu été.pdf", Data: []byte{0, 1, 2, 0xff}},
	}
	if _, err := (&email.Sender{Addr: addr, Timeout: 30 * time.Second}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	_, received := r.snapshot()
	if len(received) != 1 {
		t.Fatalf("relay received %d messages", len(received))
	}
	raw := received[0].data
	parts := readMixed(t, raw)
	if len(parts) != 3 {
		t.Fatalf("%d parts, want the body and 2 attachments", len(parts))
	}

	// The body: the alternative of text and HTML, as without attachments.
	typ, params, err := mime.ParseMediaType(parts[0].header["Content-Type"][0])
	if err != nil || typ != "multipart/alternative" {
		t.Fatalf("first part %q", parts[0].header["Content-Type"])
	}
	alt := readParts(t, multipart.NewReader(bytes.NewReader(parts[0].content), params["boundary"]))
	if len(alt) != 2 || alt[0].contentType != "text/plain; charset=utf-8" || alt[1].body != campaignMessage().HTML {
		t.Fatalf("alternative %+v", alt)
	}

	for i, want := range []struct {
		typ, name string
		data      []byte
	}{{"application/json", "data-request-gdr_1.json", export}, {"application/octet-stream", "reçu été.pdf", []byte{0, 1, 2, 0xff}}} {
		p := parts[i+1]
		if got := p.header["Content-Transfer-Encoding"]; len(got) != 1 || got[0] != "base64" {
			t.Errorf("attachment %d encoded %v", i, got)
		}
		disp, dparams, err := mime.ParseMediaType(p.header["Content-Disposition"][0])
		if err != nil || disp != "attachment" || dparams["filename"] != want.name {
			t.Errorf("attachment %d disposition %q: %v", i, p.header["Content-Disposition"], err)
		}
		ct, cparams, err := mime.ParseMediaType(p.header["Content-Type"][0])
		if err != nil || ct != want.typ || cparams["name"] != want.name {
			t.Errorf("attachment %d type %q: %v", i, p.header["Content-Type"], err)
		}
		if !bytes.Equal(p.content, want.data) {
			t.Errorf("attachment %d content %q, want %q", i, p.content, want.data)
		}
	}
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 998 || bytes.ContainsAny(line, "\r\n") {
			t.Errorf("line %d: %d octets or a bare line end", i, len(line))
		}
	}
}

func TestAttachmentsAfterATextOnlyBody(t *testing.T) {
	m := campaignMessage()
	m.HTML = ""
	m.Text = "See the attachment."
	m.Attachments = []email.Attachment{{Filename: "a.json", ContentType: "application/json; charset=utf-8", Data: nil}}
	raw, err := email.Build(m)
	if err != nil {
		t.Fatal(err)
	}
	parts := readMixed(t, raw)
	if len(parts) != 2 || parts[0].header["Content-Type"][0] != "text/plain; charset=utf-8" ||
		string(parts[0].content) != "See the attachment." || len(parts[1].content) != 0 {
		t.Fatalf("parts %+v", parts)
	}
	if ct := parts[1].header["Content-Type"][0]; ct != `application/json; charset=utf-8; name=a.json` {
		t.Errorf("attachment type %q", ct)
	}
}

func TestBuildRefusesAttachmentsItCannotSendSafely(t *testing.T) {
	for name, a := range map[string]email.Attachment{
		"empty name":                    {Filename: "", Data: []byte("x")},
		"name with a line break":        {Filename: "a.json\r\nBcc: all@example.org"},
		"name with a path":              {Filename: "../../etc/passwd"},
		"name with a backslash":         {Filename: `..\boot.ini`},
		"name too long":                 {Filename: strings.Repeat("a", 201)},
		"name not UTF-8":                {Filename: "caf\xe9.txt"},
		"content type with a newline":   {Filename: "a", ContentType: "text/plain\r\nBcc: all@example.org"},
		"content type without subtype":  {Filename: "a", ContentType: "text"},
		"multipart content type":        {Filename: "a", ContentType: "multipart/mixed; boundary=x"},
		"content type naming the file":  {Filename: "a", ContentType: `application/json; name="b.exe"`},
		"content type that is not MIME": {Filename: "a", ContentType: "a/b; ;;"},
	} {
		m := campaignMessage()
		m.Attachments = []email.Attachment{{Filename: "ok.json", Data: []byte("{}")}, a}
		raw, err := email.Build(m)
		var se *channels.SendError
		var fe *email.FieldError
		if !errors.As(err, &se) || se.Code != channels.CodeInvalidRequest || !errors.As(err, &fe) || fe.Field != "attachments" {
			t.Errorf("%s: built %d bytes, error %v", name, len(raw), err)
		}
	}
}

// FuzzBuildAttachment: whatever the file's name, type and content, the
// message is refused as invalid_request or parses back to the same name
// and bytes, with no header the inputs did not ask for.
func FuzzBuildAttachment(f *testing.F) {
	f.Add("data-request-gdr_1.json", "application/json", []byte(`{"format_version":1}`))
	f.Add("reçu été.pdf", "", []byte{0, 0xff})
	f.Add("a\"b;c=d.txt", "text/plain; charset=utf-8", []byte("--boundary\r\n"))
	f.Add("x\r\nBcc: y", "text/plain\r\nBcc: y", []byte(""))
	f.Fuzz(func(t *testing.T, name, contentType string, data []byte) {
		m := campaignMessage()
		m.Attachments = []email.Attachment{{Filename: name, ContentType: contentType, Data: data}}
		raw, err := email.Build(m)
		if err != nil {
			var se *channels.SendError
			if !errors.As(err, &se) || se.Code != channels.CodeInvalidRequest {
				t.Fatalf("not an invalid_request: %v", err)
			}
			return
		}
		msg := parseChecked(t, raw)
		for key := range msg.Header {
			if !builtHeaders[key] {
				t.Fatalf("header %q", key)
			}
		}
		parts := readMixed(t, raw)
		if len(parts) != 2 {
			t.Fatalf("%d parts", len(parts))
		}
		_, dparams, err := mime.ParseMediaType(parts[1].header["Content-Disposition"][0])
		if err != nil || dparams["filename"] != name {
			t.Fatalf("filename %q, want %q (%v)", dparams["filename"], name, err)
		}
		if !bytes.Equal(parts[1].content, data) {
			t.Fatalf("content differs")
		}
	})
}

// newBase64Reader decodes a base64 part, skipping its line breaks (the
// decoder ignores CR and LF).
func newBase64Reader(r io.Reader) io.Reader { return base64.NewDecoder(base64.StdEncoding, r) }
