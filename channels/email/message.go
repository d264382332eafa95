package email

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
)

// Limits on what a Message may hold, so that no header line can pass the
// 998 octets RFC 5322 allows.
const (
	maxAddressLen = 254 // RFC 5321's path limit
	maxNameLen    = 200
	maxURLLen     = 900
	maxHeaderName = 76
	maxHeaderText = 2000 // Subject and extra header values, folded
)

// Message is one e-mail to one recipient.
type Message struct {
	// From is the header and envelope sender; From.Name is optional.
	From mail.Address
	// To is the one recipient; To.Name is optional.
	To mail.Address
	// ReplyTo is optional (empty Address: none).
	ReplyTo mail.Address
	// Subject is required; any UTF-8 text without CR or LF.
	Subject string
	// Text is the required text/plain body; HTML, when set, is sent as
	// its text/html alternative.
	Text, HTML string
	// UnsubscribeURL (https) and UnsubscribeMailto (a mailto: URI) are
	// optional; either sets List-Unsubscribe, and the URL also sets
	// List-Unsubscribe-Post for RFC 8058's one-click unsubscribe (the
	// URL must then accept a POST without a session).
	UnsubscribeURL, UnsubscribeMailto string
	// Headers are extra headers, each named "X-…", such as
	// X-Service-Message-Id (the service's own message id).
	Headers map[string]string
	// Date is required: the library reads no clock.
	Date time.Time
	// MessageIDLocal, when set, is the left-hand side of the Message-ID
	// (letters, digits, '_', '-' and '.', at most 64): the same message
	// sent again carries the same Message-ID, by which mail systems drop
	// a duplicate. A random one otherwise.
	MessageIDLocal string
	// MessageIDDomain is the right-hand side of the Message-ID; the
	// domain of From.Address when empty.
	MessageIDDomain string
	// Attachments are files sent after the body; with any, the message
	// is multipart/mixed, its first part the body as it would be alone
	// (the text, or the text/HTML alternative).
	Attachments []Attachment
}

// Attachment is a file attached to a Message, sent base64-encoded with a
// Content-Disposition naming it.
type Attachment struct {
	// Filename is the name the reader's client shows and saves under:
	// 1 to 200 bytes of UTF-8 without control characters, '/' or '\\'
	// (non-ASCII names are RFC 2231-encoded).
	Filename string
	// ContentType is the MIME type, parameters allowed
	// ("application/json"); application/octet-stream when empty.
	ContentType string
	// Data is the file's content, of any size the relay accepts.
	Data []byte
}

func (a Attachment) contentType() string {
	if a.ContentType == "" {
		return "application/octet-stream"
	}
	return a.ContentType
}

// FieldError is the cause of an invalid_request SendError: the Message
// field at fault and why. It never holds the field's value.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, reason string) *channels.SendError {
	return channels.NewSendError(channels.CodeInvalidRequest, false, 0, &FieldError{Field: field, Reason: reason})
}

// Build returns m as an RFC 5322 message with CRLF line ends, ready for
// SMTP DATA. A message it cannot build safely (a line break in a header
// field, an address that does not parse, an unsubscribe URL that is not
// https, …) is a *channels.SendError with Code invalid_request and a
// *FieldError cause.
func Build(m Message) ([]byte, error) {
	b, _, err := build(m)
	return b, err
}

// build returns the message and its Message-ID (without angle brackets).
func build(m Message) ([]byte, string, error) {
	if err := m.validate(); err != nil {
		return nil, "", err
	}
	domain := m.MessageIDDomain
	if domain == "" {
		domain = m.From.Address[strings.LastIndexByte(m.From.Address, '@')+1:]
	}
	if !isHostname(domain) {
		return nil, "", invalid("message_id_domain", "is not a host name")
	}
	local := m.MessageIDLocal
	if local == "" {
		random := make([]byte, 16)
		_, _ = rand.Read(random) // never fails (crypto/rand since Go 1.24)
		local = hex.EncodeToString(random)
	} else if !isMessageIDLocal(local) {
		return nil, "", invalid("message_id_local", "must be 1 to 64 letters, digits, '_', '-' or '.'")
	}
	id := local + "@" + domain

	var buf bytes.Buffer
	header := func(name, value string) { buf.WriteString(name + ": " + value + "\r\n") }
	header("From", address(m.From))
	if m.ReplyTo.Address != "" {
		header("Reply-To", address(m.ReplyTo))
	}
	header("To", address(m.To))
	buf.WriteString(unstructured("Subject", m.Subject))
	header("Date", m.Date.UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+id+">")
	switch {
	case m.UnsubscribeURL != "" && m.UnsubscribeMailto != "":
		header("List-Unsubscribe", "<"+m.UnsubscribeURL+">,\r\n <"+m.UnsubscribeMailto+">")
	case m.UnsubscribeURL != "":
		header("List-Unsubscribe", "<"+m.UnsubscribeURL+">")
	case m.UnsubscribeMailto != "":
		header("List-Unsubscribe", "<"+m.UnsubscribeMailto+">")
	}
	if m.UnsubscribeURL != "" {
		header("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
	}
	names := make([]string, 0, len(m.Headers))
	for name := range m.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		buf.WriteString(unstructured(textproto.CanonicalMIMEHeaderKey(name), m.Headers[name]))
	}
	header("MIME-Version", "1.0")

	bodyHeader, body := bodyPart(m)
	if len(m.Attachments) == 0 {
		for _, name := range []string{"Content-Type", "Content-Transfer-Encoding"} {
			if v := bodyHeader.Get(name); v != "" {
				header(name, v)
			}
		}
		buf.WriteString("\r\n")
		buf.Write(body)
		if !bytes.HasSuffix(body, []byte("\r\n")) {
			buf.WriteString("\r\n")
		}
		return buf.Bytes(), id, nil
	}
	// multipart/mixed (RFC 2046 §5.1.3): the body first, as it would be
	// alone, then each attachment. Writes to a bytes.Buffer do not fail.
	w := multipart.NewWriter(&buf)
	header("Content-Type", mime.FormatMediaType("multipart/mixed", map[string]string{"boundary": w.Boundary()}))
	buf.WriteString("\r\n")
	pw, _ := w.CreatePart(bodyHeader)
	_, _ = pw.Write(body)
	for _, a := range m.Attachments {
		typ, params, _ := mime.ParseMediaType(a.contentType()) // validate checked it
		if params == nil {
			params = map[string]string{}
		}
		params["name"] = a.Filename
		pw, _ := w.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {mime.FormatMediaType(typ, params)},
			"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename})},
			"Content-Transfer-Encoding": {"base64"},
		})
		writeBase64(pw, a.Data)
	}
	_ = w.Close() // ends with the closing delimiter and CRLF
	return buf.Bytes(), id, nil
}

// bodyPart returns the body's own MIME headers and content: the text
// alone (quoted-printable, ending as the text does), or the
// multipart/alternative of the text and the HTML.
func bodyPart(m Message) (textproto.MIMEHeader, []byte) {
	var buf bytes.Buffer
	if m.HTML == "" {
		writeQuotedPrintable(&buf, m.Text)
		return textproto.MIMEHeader{
			"Content-Type":              {"text/plain; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		}, buf.Bytes()
	}
	w := multipart.NewWriter(&buf)
	// Parts in increasing preference (RFC 2046 §5.1.4): the text, then
	// the HTML. Writes to a bytes.Buffer do not fail. The CRLF ending a
	// part belongs to the next delimiter, which the writer adds.
	for _, part := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		pw, _ := w.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		writeQuotedPrintable(pw, part.body)
	}
	_ = w.Close() // ends with the closing delimiter and CRLF
	return textproto.MIMEHeader{
		"Content-Type": {mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": w.Boundary()})},
	}, buf.Bytes()
}

// writeBase64 writes b base64-encoded in lines of 76 characters with
// CRLF (RFC 2045 §6.8).
func writeBase64(w io.Writer, b []byte) {
	enc := base64.StdEncoding.EncodeToString(b)
	for len(enc) > 76 {
		_, _ = io.WriteString(w, enc[:76]+"\r\n")
		enc = enc[76:]
	}
	_, _ = io.WriteString(w, enc+"\r\n")
}

func (m Message) validate() error {
	if err := checkAddress("from", m.From, true); err != nil {
		return err
	}
	if err := checkAddress("to", m.To, true); err != nil {
		return err
	}
	if err := checkAddress("reply_to", m.ReplyTo, false); err != nil {
		return err
	}
	if err := checkText("subject", m.Subject, true); err != nil {
		return err
	}
	if m.Text == "" {
		return invalid("text", "is required")
	}
	if m.Date.IsZero() {
		return invalid("date", "is required")
	}
	if m.UnsubscribeURL != "" {
		if err := checkURI("unsubscribe_url", m.UnsubscribeURL, "https"); err != nil {
			return err
		}
	}
	if m.UnsubscribeMailto != "" {
		if err := checkURI("unsubscribe_mailto", m.UnsubscribeMailto, "mailto"); err != nil {
			return err
		}
	}
	for _, a := range m.Attachments {
		if err := a.validate(); err != nil {
			return err
		}
	}
	for name, value := range m.Headers {
		if !isExtraHeaderName(name) {
			return invalid("headers", "a header name is not X-… in letters, digits and hyphens")
		}
		if err := checkText("headers", value, false); err != nil {
			return err
		}
	}
	return nil
}

func (a Attachment) validate() error {
	switch {
	case a.Filename == "" || len(a.Filename) > maxNameLen:
		return invalid("attachments", "a file name is empty or longer than 200 bytes")
	case !utf8.ValidString(a.Filename) || strings.ContainsFunc(a.Filename, func(r rune) bool {
		return r < ' ' || r == 0x7f || r == '/' || r == '\\' || (r >= 0x80 && r < 0xa0)
	}):
		return invalid("attachments", "a file name holds a control character or a path separator")
	case len(a.ContentType) > maxHeaderText:
		return invalid("attachments", "a content type is too long")
	}
	typ, params, err := mime.ParseMediaType(a.contentType())
	if err != nil || strings.Count(typ, "/") != 1 || strings.HasPrefix(typ, "multipart/") || strings.HasPrefix(typ, "message/") {
		return invalid("attachments", "a content type is not a single-part type/subtype")
	}
	for k, v := range params {
		if k == "name" || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return invalid("attachments", "a content type has a name parameter or a control character")
		}
	}
	return nil
}

func checkAddress(field string, a mail.Address, required bool) error {
	switch {
	case a.Address == "" && a.Name == "" && !required:
		return nil
	case a.Address == "":
		return invalid(field, "is required")
	case len(a.Address) > maxAddressLen:
		return invalid(field, "is too long")
	case len(a.Name) > maxNameLen:
		return invalid(field, "its name is too long")
	case strings.ContainsAny(a.Name, "\r\n"):
		return invalid(field, "its name holds a line break")
	}
	for i := 0; i < len(a.Address); i++ {
		if a.Address[i] <= ' ' || a.Address[i] > '~' {
			// Internationalised addresses need SMTPUTF8; not supported.
			return invalid(field, "is not an ASCII e-mail address")
		}
	}
	parsed, err := mail.ParseAddress("<" + a.Address + ">")
	if err != nil || parsed.Address != a.Address || !strings.Contains(a.Address, "@") {
		return invalid(field, "is not an e-mail address")
	}
	return nil
}

func checkText(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return invalid(field, "is required")
	case len(s) > maxHeaderText:
		return invalid(field, "is too long")
	case strings.ContainsAny(s, "\r\n"):
		return invalid(field, "holds a line break")
	}
	return nil
}

// checkURI accepts an absolute URI of the scheme made of printable ASCII
// other than the angle brackets and spaces List-Unsubscribe cannot carry.
func checkURI(field, s, scheme string) error {
	if len(s) > maxURLLen {
		return invalid(field, "is too long")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || s[i] == '<' || s[i] == '>' {
			return invalid(field, "holds a character a URI cannot")
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != scheme {
		return invalid(field, "is not a "+scheme+": URI")
	}
	if scheme == "https" && u.Host == "" || scheme == "mailto" && u.Opaque == "" {
		return invalid(field, "is not a "+scheme+": URI")
	}
	return nil
}

func isExtraHeaderName(name string) bool {
	if len(name) < 3 || len(name) > maxHeaderName || !strings.EqualFold(name[:2], "x-") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func isHostname(s string) bool {
	if s == "" || len(s) > 253 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// address formats a as mail.Address.String does, except that a display
// name that is not printable ASCII is always B-encoded: String Q-encodes
// some, and a Q-encoded word holding a backslash (among others) is not
// allowed in a phrase (RFC 2047 §5), so net/mail cannot read it back.
func address(a mail.Address) string {
	if a.Name == "" || isPrintableASCII(a.Name) {
		return a.String()
	}
	return fold(bWords(a.Name) + " " + (&mail.Address{Address: a.Address}).String())
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// unstructured returns the header line (or folded lines) "Name: value"
// with CRLF. Printable ASCII is folded at spaces; anything else is
// RFC 2047 Q-encoded, one encoded-word per folded line. ASCII that
// would read as an encoded-word ("=?"), or has a word too long for a
// line, is B-encoded so that it reaches the reader unchanged.
func unstructured(name, value string) string {
	encoded := mime.QEncoding.Encode("utf-8", value) // unchanged when printable ASCII
	if strings.Contains(value, "=?") || longestWord(value) > 900 {
		encoded = bWords(value)
	}
	return fold(name+": "+encoded) + "\r\n"
}

// fold breaks a header line at spaces so that lines stay near 78
// characters; it never leaves a line of whitespace only.
func fold(line string) string {
	words := strings.Split(line, " ")
	var b strings.Builder
	b.WriteString(words[0])
	width := len(words[0])
	for _, w := range words[1:] {
		if w != "" && width+1+len(w) > 78 {
			b.WriteString("\r\n")
			width = 0
		}
		b.WriteString(" " + w)
		width += 1 + len(w)
	}
	return b.String()
}

func longestWord(s string) int {
	longest := 0
	for _, w := range strings.Split(s, " ") {
		longest = max(longest, len(w))
	}
	return longest
}

// bWords B-encodes s in encoded-words of at most 45 bytes each, never
// splitting a UTF-8 sequence (RFC 2047 §5.3).
func bWords(s string) string {
	var words []string
	for len(s) > 0 {
		n := 0
		for n < len(s) {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n+size > 45 {
				break
			}
			n += size
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, " ")
}

// writeQuotedPrintable writes body quoted-printable with CRLF line ends.
// Every CR, LF or CRLF in body is one line break; they are made LF first
// because the writer forgets a CR when an encoded byte follows it, and
// would turn "\r\xc1\n" into one break instead of two.
func writeQuotedPrintable(w io.Writer, body string) {
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	qp := quotedprintable.NewWriter(w)
	_, _ = io.WriteString(qp, body)
	_ = qp.Close()
}

// isMessageIDLocal tells whether s is a safe Message-ID left-hand side.
func isMessageIDLocal(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
