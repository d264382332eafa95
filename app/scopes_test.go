package app_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
)

// Handlers and route registration name scopes by the domain's constants:
// no scope string literal outside domain (tests aside).
func TestNoScopeLiteralsOutsideDomain(t *testing.T) {
	var literals []string
	for _, s := range append(domain.AdminScopes(), domain.ImageScopeUsageRead, domain.ImageScopeImagesRead, domain.ImageScopeImagesWrite) {
		literals = append(literals, strconv.Quote(string(s)))
	}
	for _, dir := range []string{"readapi", "writeapi", "httpapi", "auth", "ingest", "app", "cmd/cgp"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, l := range literals {
				if strings.Contains(string(b), l) {
					t.Errorf("%s: scope literal %s (use the domain constant)", path, l)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
