package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
)

// TestShownHidesEverySecret (point 11 of issue 14): every event type of
// the catalogue whose payload has a secret field (a JSON name with
// "secret", not a hash of one) shows "[set]" in its place through Shown,
// so the audit history and exports never hand a secret out; Shown leaves
// the original event untouched.
func TestShownHidesEverySecret(t *testing.T) {
	cat := domain.Events()
	checked := 0
	for _, name := range cat.Names() {
		spec, _ := cat.Spec(name)
		ev := spec.New()
		v := reflect.ValueOf(ev).Elem()
		var secrets []string
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			tag := strings.Split(f.Tag.Get("json"), ",")[0]
			secretName := strings.Contains(tag, "secret") || strings.HasSuffix(tag, "_token")
			if f.Type.Kind() == reflect.String && secretName && !strings.HasSuffix(tag, "_hash") {
				v.Field(i).SetString("s3cr3t-value-" + tag)
				secrets = append(secrets, tag)
			}
		}
		if len(secrets) == 0 {
			continue
		}
		checked++
		shown, err := json.Marshal(domain.Shown(ev))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(shown, &m)
		for _, tag := range secrets {
			if m[tag] != domain.SecretMarker {
				t.Errorf("%s: %s shown as %v, want %q", name, tag, m[tag], domain.SecretMarker)
			}
		}
		if strings.Contains(string(shown), "s3cr3t-value") {
			t.Errorf("%s: shown %s", name, shown)
		}
		orig, _ := json.Marshal(ev)
		if !strings.Contains(string(orig), "s3cr3t-value") {
			t.Errorf("%s: Shown changed the event itself", name)
		}
	}
	if checked < 6 {
		t.Errorf("only %d event types carry secrets", checked)
	}
}
