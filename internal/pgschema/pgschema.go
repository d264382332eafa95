// Package pgschema reads the schema a PostgreSQL connection string names
// in its search_path, for the adapters that keep their tables in a schema
// of their own (the event log, the key vault).
package pgschema

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// FromURL returns the first schema named by the search_path parameter of
// url ("" when none, or when url does not parse: the adapter's own
// validation reports that). "$user" is skipped.
func FromURL(url string) string {
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		return ""
	}
	for _, s := range strings.Split(pc.RuntimeParams["search_path"], ",") {
		s = strings.Trim(strings.TrimSpace(s), `"`)
		if s != "" && !strings.HasPrefix(s, "$") {
			return s
		}
	}
	return ""
}
