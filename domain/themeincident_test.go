package domain_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func change(id, topic, at string) domain.ThemeChange {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	return domain.ThemeChange{ID: id, ThemeID: "thm_" + id, Name: "Theme " + id, Topic: topic, At: t}
}

func TestThemeChangeDays(t *testing.T) {
	rule := domain.DefaultThemeIncidentRule()
	days := rule.ThemeChangeDays([]domain.ThemeChange{
		change("c", domain.ThemeTopicUpdate, "2026-11-10T09:00:00Z"),
		change("a", domain.ThemeTopicPublish, "2026-11-01T08:00:00Z"),
		change("b", domain.ThemeTopicUpdate, "2026-11-01T23:59:59Z"), // same UTC day: the publish stays the suspect
		change("d", domain.ThemeTopicUpdate, "2026-11-12T01:00:00+03:00"),
		change("e", domain.ThemeTopicUpdate, "2026-11-11T23:00:00Z"), // same UTC day as d: the later edit is the suspect
		change("f", domain.ThemeTopicUpdate, "2026-11-20T10:00:00Z"),
	})
	type got struct {
		Day, Suspect, From, To, Baseline string
		Changes                          int
	}
	var out []got
	for _, d := range days {
		out = append(out, got{d.Day, d.Suspect.ID, d.WindowFrom, d.WindowTo, d.BaselineFrom, d.Changes})
	}
	want := []got{
		{"2026-11-20", "f", "2026-11-21", "2026-11-27", "2026-11-06", 1},
		{"2026-11-11", "e", "2026-11-12", "2026-11-18", "2026-10-28", 2}, // next change day 9 days later: the full window
		{"2026-11-10", "c", "2026-11-11", "2026-11-11", "2026-10-27", 1}, // cut at the next change day, which it includes
		{"2026-11-01", "a", "2026-11-02", "2026-11-08", "2026-10-18", 2}, // the next change day (10th) is after the 7 days
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("days\n got %+v\nwant %+v", out, want)
	}
	if len(rule.ThemeChangeDays(nil)) != 0 {
		t.Error("no change, no day")
	}
}

func kw(id string, points ...any) domain.TrackedKeyword {
	k := domain.TrackedKeyword{ID: id, Keyword: "keyword " + id, URL: "https://shop.example/" + id}
	for i := 0; i < len(points); i += 2 {
		k.Rankings = append(k.Rankings, domain.RankingPoint{Date: points[i].(string), Position: points[i+1].(float64)})
	}
	return k
}

func TestThemeIncidentRule(t *testing.T) {
	rule := domain.DefaultThemeIncidentRule()
	day := rule.ThemeChangeDays([]domain.ThemeChange{change("p", domain.ThemeTopicPublish, "2026-11-10T12:00:00Z")})[0]
	// The day: 2026-11-10; baseline [2026-10-27, 2026-11-10); window [2026-11-11, 2026-11-17].
	steady := func(id string) domain.TrackedKeyword { return kw(id, "2026-11-09", 5.0, "2026-11-12", 5.0) }
	cases := []struct {
		name     string
		keywords []domain.TrackedKeyword
		incident bool
		dropped  []string
		compared int
		severity string
	}{
		{name: "no keyword", incident: false},
		{name: "two drops of exactly 3 positions", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 5.0), kw("b", "2026-11-09", 10.0, "2026-11-13", 13.0)},
			incident: true, dropped: []string{"a", "b"}, compared: 2, severity: domain.SeverityP1},
		{name: "a drop of 2.99 is not a drop", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 5.0), kw("b", "2026-11-09", 10.0, "2026-11-13", 12.99)}},
		{name: "one drop is under MinKeywords", keywords: []domain.TrackedKeyword{kw("a", "2026-11-09", 1.0, "2026-11-12", 20.0)}},
		{name: "the baseline is the last ranking before the day", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-01", 9.0, "2026-11-09", 2.0, "2026-11-12", 5.0), kw("b", "2026-11-09", 1.0, "2026-11-12", 4.0)},
			incident: true, dropped: []string{"a", "b"}, compared: 2, severity: domain.SeverityP1},
		{name: "rankings of the change day count for neither side", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-10", 1.0, "2026-11-12", 9.0), kw("b", "2026-11-09", 1.0, "2026-11-10", 9.0)}},
		{name: "the worst window position counts, even recovered", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-11", 8.0, "2026-11-17", 2.0), kw("b", "2026-11-09", 3.0, "2026-11-14", 7.0)},
			incident: true, dropped: []string{"a", "b"}, compared: 2, severity: domain.SeverityP1},
		{name: "the window's last day counts, the day after does not", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-17", 8.0), kw("b", "2026-11-09", 2.0, "2026-11-18", 8.0)}},
		{name: "a baseline 14 days old counts, 15 does not", keywords: []domain.TrackedKeyword{
			kw("a", "2026-10-27", 2.0, "2026-11-12", 8.0), kw("b", "2026-10-26", 2.0, "2026-11-12", 8.0)}},
		{name: "the share: 2 of 20 compared is 10 %", keywords: append([]domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 8.0), kw("b", "2026-11-09", 2.0, "2026-11-12", 8.0)},
			steadies(steady, 18)...), incident: true, dropped: []string{"a", "b"}, compared: 20, severity: domain.SeverityP3},
		{name: "the share: 2 of 21 compared is under 10 %", keywords: append([]domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 8.0), kw("b", "2026-11-09", 2.0, "2026-11-12", 8.0)},
			steadies(steady, 19)...)},
		{name: "a quarter dropped is P2", keywords: append([]domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 8.0), kw("b", "2026-11-09", 2.0, "2026-11-12", 12.0)},
			steadies(steady, 6)...), incident: true, dropped: []string{"b", "a"}, compared: 8, severity: domain.SeverityP2},
		{name: "moving up is no drop", keywords: []domain.TrackedKeyword{
			kw("a", "2026-11-09", 9.0, "2026-11-12", 2.0), kw("b", "2026-11-09", 9.0, "2026-11-12", 1.0)}},
		{name: "keywords without a window ranking are not compared", keywords: append([]domain.TrackedKeyword{
			kw("a", "2026-11-09", 2.0, "2026-11-12", 8.0), kw("b", "2026-11-09", 2.0, "2026-11-12", 8.0)},
			kw("c", "2026-11-09", 2.0), kw("d", "2026-11-12", 2.0)),
			incident: true, dropped: []string{"a", "b"}, compared: 2, severity: domain.SeverityP1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inc, ok := rule.Detect(day, c.keywords)
			if ok != c.incident {
				t.Fatalf("incident %v, want %v (%+v)", ok, c.incident, inc)
			}
			if !ok {
				return
			}
			var ids []string
			for _, d := range inc.Dropped {
				ids = append(ids, d.KeywordID)
				if d.Change > -rule.MinDrop || d.Change != d.Before-d.After {
					t.Errorf("drop %+v", d)
				}
			}
			if !reflect.DeepEqual(ids, c.dropped) || inc.Compared != c.compared || inc.Severity != c.severity || inc.Suspect.ID != "p" {
				t.Errorf("dropped %v compared %d severity %s, want %v %d %s", ids, inc.Compared, inc.Severity, c.dropped, c.compared, c.severity)
			}
		})
	}
}

func steadies(f func(string) domain.TrackedKeyword, n int) []domain.TrackedKeyword {
	out := make([]domain.TrackedKeyword, n)
	for i := range out {
		out[i] = f(string(rune('k'+i%10)) + string(rune('0'+i/10)))
	}
	return out
}
