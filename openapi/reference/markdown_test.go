package reference

import (
	"strings"
	"testing"
)

// FuzzRenderMarkdown: no description, however crafted, panics the renderer
// or gets a script element or a javascript: link into the page.
func FuzzRenderMarkdown(f *testing.F) {
	for _, seed := range []string{
		"plain", "**bold** and `code`", "<script>alert(1)</script>", "<SCRIPT SRC=x>",
		"[x](javascript:alert(1))", "![i](javascript:alert(1))", "<a href=\"javascript:x\">a</a>",
		"```html\n<script>x</script>\n```", "<div>\n<script>\n</div>", "&lt;script&gt;", "[x]: javascript:alert(1)\n\n[x]",
		"<scr<script>ipt>", "`<script>`", "<!-- <script> -->",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := strings.ToLower(string(renderMarkdown(src)))
		if strings.Contains(out, "<script") {
			t.Fatalf("%q rendered a script element: %s", src, out)
		}
		if strings.Contains(out, `href="javascript:`) || strings.Contains(out, `src="javascript:`) {
			t.Fatalf("%q rendered a javascript: link: %s", src, out)
		}
	})
}
