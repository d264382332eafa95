package pgschema

import "testing"

func TestFromURL(t *testing.T) {
	for url, want := range map[string]string{
		"postgres://u@h:5432/db?search_path=cgp_a":             "cgp_a",
		"postgres://u@h:5432/db?search_path=%22%24user%22,x_1": "x_1",
		"host=h dbname=db search_path=s1,public":               "s1",
		"postgres://u@h:5432/db":                               "",
		"postgres://%zz":                                       "",
	} {
		if got := FromURL(url); got != want {
			t.Errorf("FromURL(%q) = %q, want %q", url, got, want)
		}
	}
}
