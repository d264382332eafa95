package intelligence

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// RankingColumns are the columns of a ranking report, in any order; the
// header row is required and names each exactly once.
var RankingColumns = []string{"keyword", "url", "position", "search_volume", "clicks", "impressions", "date"}

// MaxRankingRows bounds the rows of one report.
const MaxRankingRows = 100_000

// ParseRankings reads a ranking report (CSV, header row first) and
// validates every row. The first bad row fails the whole report with a
// validation error whose field is the column and whose message starts with
// "line N:", N counting the header as line 1.
func ParseRankings(r io.Reader) ([]domain.KeywordRanking, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, domain.Invalid("header", "line 1: the file is empty; a header row is required")
	}
	if err != nil {
		return nil, csvError(err)
	}
	cols, err := headerColumns(header)
	if err != nil {
		return nil, err
	}
	var out []domain.KeywordRanking
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(out) == MaxRankingRows {
			return nil, domain.Invalid("file", "line %d: a report has at most %d rows", line, MaxRankingRows)
		}
		row, err := parseRow(rec, cols, line)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
}

// headerColumns maps each column name to its index in the header.
func headerColumns(header []string) (map[string]int, error) {
	cols := make(map[string]int, len(header))
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if !isRankingColumn(name) {
			return nil, domain.Invalid("header", "line 1: unknown column %q; the columns are %s", clip(name), strings.Join(RankingColumns, ", "))
		}
		if _, dup := cols[name]; dup {
			return nil, domain.Invalid(name, "line 1: column %s appears twice", name)
		}
		cols[name] = i
	}
	for _, c := range RankingColumns {
		if _, ok := cols[c]; !ok {
			return nil, domain.Invalid(c, "line 1: column %s is missing from the header", c)
		}
	}
	return cols, nil
}

func isRankingColumn(name string) bool {
	for _, c := range RankingColumns {
		if c == name {
			return true
		}
	}
	return false
}

// parseRow reads and validates one record.
func parseRow(rec []string, cols map[string]int, line int) (domain.KeywordRanking, error) {
	if len(rec) != len(cols) {
		return domain.KeywordRanking{}, domain.Invalid("file", "line %d: %d fields, the header has %d", line, len(rec), len(cols))
	}
	get := func(c string) string { return strings.TrimSpace(rec[cols[c]]) }
	r := domain.KeywordRanking{Keyword: get("keyword"), URL: get("url"), Date: get("date")}
	var err error
	if r.Position, err = strconv.ParseFloat(get("position"), 64); err != nil {
		return r, domain.Invalid("position", "line %d: position must be a number", line)
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"search_volume", &r.SearchVolume}, {"clicks", &r.Clicks}, {"impressions", &r.Impressions}} {
		if *f.dst, err = strconv.ParseInt(get(f.name), 10, 64); err != nil {
			return r, domain.Invalid(f.name, "line %d: %s must be an integer", line, f.name)
		}
	}
	if err := r.Validate(); err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return r, domain.Invalid(de.Field, "line %d: %s", line, de.Message)
		}
		return r, err
	}
	return r, nil
}

// csvError reports a malformed CSV line as a validation error.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return domain.Invalid("file", "line %d: %v", pe.Line, pe.Err)
	}
	return fmt.Errorf("read report: %w", err)
}

// clip shortens an echoed header cell.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
