package intelligence

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
)

func TestParseRankings(t *testing.T) {
	f, err := os.Open("testdata/rankings.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ParseRankings(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("rows = %d, want 3", len(rows))
	}
	want := domain.KeywordRanking{Keyword: "running shoes", URL: "https://shop.example/products/runner", Position: 4.2,
		SearchVolume: 12000, Clicks: 55, Impressions: 1100, Date: "2026-11-08"}
	if rows[1] != want {
		t.Fatalf("row 2 = %+v, want %+v", rows[1], want)
	}
}

func TestParseRankingsColumnsInAnyOrder(t *testing.T) {
	rows, err := ParseRankings(strings.NewReader("\ufeffURL,Keyword,date,position,clicks,impressions,search_volume\n" +
		"https://a.example/x,Blue  Socks,2026-01-31,1,0,0,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Keyword != "blue socks" || rows[0].URL != "https://a.example/x" {
		t.Fatalf("rows = %+v", rows)
	}
}

func TestParseRankingsRejects(t *testing.T) {
	const header = "keyword,url,position,search_volume,clicks,impressions,date\n"
	const good = "socks,https://a.example/,3,10,1,5,2026-01-01\n"
	for _, tc := range []struct{ name, in, field, line string }{
		{"empty", "", "header", "line 1"},
		{"missing column", "keyword,url,position,search_volume,clicks,date\n", "impressions", "line 1"},
		{"unknown column", "keyword,url,position,search_volume,clicks,impressions,date,x\n", "header", "line 1"},
		{"duplicate column", "keyword,keyword,url,position,search_volume,clicks,impressions,date\n", "keyword", "line 1"},
		{"position", header + good + "socks,https://a.example/,abc,1,0,0,2026-01-01\n", "position", "line 3"},
		{"position zero", header + "socks,https://a.example/,0,1,0,0,2026-01-01\n", "position", "line 2"},
		{"date", header + "socks,https://a.example/,1,1,0,0,2026-02-30\n", "date", "line 2"},
		{"url", header + "socks,ftp://a.example/,1,1,0,0,2026-02-01\n", "url", "line 2"},
		{"keyword", header + " ,https://a.example/,1,1,0,0,2026-02-01\n", "keyword", "line 2"},
		{"clicks", header + "socks,https://a.example/,1,1,9,3,2026-02-01\n", "clicks", "line 2"},
		{"volume", header + "socks,https://a.example/,1,-1,0,0,2026-02-01\n", "search_volume", "line 2"},
		{"fields", header + good + good + "socks,https://a.example/\n", "file", "line 4"},
		{"quote", header + "\"socks,https://a.example/,1,1,0,0,2026-02-01\n", "file", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRankings(strings.NewReader(tc.in))
			de, ok := err.(*domain.Error)
			if !ok || de.Code != domain.CodeInvalid || de.Field != tc.field || !strings.HasPrefix(de.Message, tc.line+":") {
				t.Fatalf("err = %#v, want invalid %s at %s", err, tc.field, tc.line)
			}
		})
	}
}

// FuzzParseRankings: any input either parses into valid rankings or fails
// with a validation error naming a field and a line; it never panics.
func FuzzParseRankings(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.csv")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rows, err := ParseRankings(bytes.NewReader(in))
		if err != nil {
			de, ok := err.(*domain.Error)
			if !ok || de.Code != domain.CodeInvalid || de.Field == "" || !strings.HasPrefix(de.Message, "line ") {
				t.Fatalf("err = %#v", err)
			}
			return
		}
		for i := range rows {
			r := rows[i]
			if err := r.Validate(); err != nil || r != rows[i] {
				t.Fatalf("row %d not valid or not normalised: %+v %v", i, rows[i], err)
			}
		}
	})
}
