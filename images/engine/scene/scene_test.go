package scene_test

import (
	"testing"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine/scene"
)

func TestCheckOptions(t *testing.T) {
	for _, c := range []struct {
		opts     map[string]string
		provider bool
		field    string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"scene": "wood-surface", "reflection": "on"}, false, ""},
		{map[string]string{"prompt": "on a beach"}, true, ""},
		{map[string]string{"prompt": "on a beach"}, false, "prompt"},
		{map[string]string{"scene": "moon"}, true, "scene"},
		{map[string]string{"scene": "studio-white", "prompt": "x"}, true, "prompt"},
		{map[string]string{"reflection": "maybe"}, false, "reflection"},
		{map[string]string{"size": "big"}, false, "size"},
		{map[string]string{"prompt": "\xff"}, true, "prompt"},
	} {
		err := scene.CheckOptions(c.opts, c.provider)
		if c.field == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opts, err)
			}
			continue
		}
		var de *domain.Error
		if de, _ = err.(*domain.Error); de == nil || de.Code != domain.CodeInvalid || de.Field != c.field {
			t.Errorf("%v (provider %v): %v, want invalid %s", c.opts, c.provider, err, c.field)
		}
	}
}

// FuzzCheckOptions: any options are accepted or refused naming a field of
// at most 65 runes, never a panic; an accepted prompt is valid UTF-8
// within the bound.
func FuzzCheckOptions(f *testing.F) {
	f.Add("scene", "marble-surface", true)
	f.Add("prompt", "on a table", true)
	f.Add("reflection", "off", false)
	f.Fuzz(func(t *testing.T, name, value string, provider bool) {
		opts := map[string]string{name: value}
		err := scene.CheckOptions(opts, provider)
		if err != nil {
			de, ok := err.(*domain.Error)
			if !ok || de.Code != domain.CodeInvalid || de.Field == "" || utf8.RuneCountInString(de.Field) > 65 {
				t.Fatalf("%q=%q: %v", name, value, err)
			}
			return
		}
		if p := opts["prompt"]; p != "" && (!provider || !utf8.ValidString(p) || len(p) > scene.MaxPromptBytes) {
			t.Fatalf("accepted prompt %q (provider %v)", p, provider)
		}
	})
}
