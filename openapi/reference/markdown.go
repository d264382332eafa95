package reference

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
)

// markdown renders CommonMark without its unsafe option: raw HTML blocks
// and inline HTML are replaced by a comment, and links or images with a
// dangerous scheme (javascript:, vbscript:, data: other than images) get an
// empty destination.
var markdown = goldmark.New()

// renderMarkdown renders a description of the document. The result is
// marked safe for html/template: goldmark escapes every text and attribute
// it writes.
func renderMarkdown(src string) template.HTML {
	src = strings.TrimSpace(src)
	if src == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		// goldmark writes to a bytes.Buffer, which does not fail; escape
		// the text as it is rather than lose it.
		return template.HTML("<p>" + template.HTMLEscapeString(src) + "</p>")
	}
	return template.HTML(buf.String()) //nolint:gosec // goldmark without WithUnsafe escapes its output
}
