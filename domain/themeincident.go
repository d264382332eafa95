package domain

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Theme topics a ThemeRecorded carries.
const (
	ThemeTopicPublish = "themes/publish"
	ThemeTopicUpdate  = "themes/update"
)

// ThemeIncidentRule is the theme regression incident rule (docs/decisions.md,
// "Theme regression incidents"). Rankings are daily, so the rule works on
// UTC days: the changes of the main theme on one day form one suspect; a
// ranking dated D is attributed to the latest change day strictly before D,
// at most WindowDays before it. The change day itself is ambiguous (its
// ranking may predate the change) and counts for the change day before, so
// every ranking date belongs to at most one change day's window.
type ThemeIncidentRule struct {
	// WindowDays is how many days after the change day the window reaches
	// (cut at the next change day, which it includes).
	WindowDays int
	// BaselineDays bounds the baseline's age: the last ranking dated before
	// the change day and at most this many days before it.
	BaselineDays int
	// MinDrop is the positions a keyword must lose, from its baseline to
	// its worst ranking in the window, to count as dropped.
	MinDrop float64
	// MinKeywords and MinShare: an incident needs at least MinKeywords
	// dropped keywords and at least MinShare of the keywords compared.
	MinKeywords int
	MinShare    float64
}

// DefaultThemeIncidentRule is the rule the incident view applies: a 7-day
// window, a baseline at most 14 days old, a drop of 3 positions or more, at
// least 2 keywords and 10 % of those compared.
func DefaultThemeIncidentRule() ThemeIncidentRule {
	return ThemeIncidentRule{WindowDays: 7, BaselineDays: 14, MinDrop: 3, MinKeywords: 2, MinShare: 0.10}
}

// ThemeChange is one publish or edit of the shop's main theme.
type ThemeChange struct {
	ID                               string // the change's id (its event id)
	ThemeID, ExternalID, Name, Topic string
	At                               time.Time
}

// ThemeChangeDay is the main theme's changes of one UTC day, the suspect
// among them and the days the rule compares.
type ThemeChangeDay struct {
	Day string // YYYY-MM-DD (UTC)
	// Suspect is the day's last publish, or its last edit when it had no
	// publish: a publish replaces the whole theme.
	Suspect ThemeChange
	Changes int // changes of the main theme that day
	// BaselineFrom is the oldest date a baseline is taken from; the
	// baseline is dated before Day.
	BaselineFrom string
	// WindowFrom and WindowTo are the window's dates, inclusive.
	WindowFrom, WindowTo string
}

// ThemeChangeDays groups changes (in any order) by UTC day, newest day
// first, each with its suspect, baseline bound and window.
func (r ThemeIncidentRule) ThemeChangeDays(changes []ThemeChange) []ThemeChangeDay {
	byDay := map[string]*ThemeChangeDay{}
	var days []string
	for _, c := range changes {
		day := c.At.UTC().Format(time.DateOnly)
		d, ok := byDay[day]
		if !ok {
			d = &ThemeChangeDay{Day: day, Suspect: c}
			byDay[day] = d
			days = append(days, day)
		}
		d.Changes++
		if suspectBefore(d.Suspect, c) {
			d.Suspect = c
		}
	}
	slices.Sort(days)
	out := make([]ThemeChangeDay, 0, len(days))
	for i := len(days) - 1; i >= 0; i-- {
		d := byDay[days[i]]
		t, _ := time.Parse(time.DateOnly, d.Day)
		d.BaselineFrom = t.AddDate(0, 0, -r.BaselineDays).Format(time.DateOnly)
		d.WindowFrom = t.AddDate(0, 0, 1).Format(time.DateOnly)
		d.WindowTo = t.AddDate(0, 0, r.WindowDays).Format(time.DateOnly)
		if i+1 < len(days) && days[i+1] < d.WindowTo {
			d.WindowTo = days[i+1]
		}
		out = append(out, *d)
	}
	return out
}

// suspectBefore reports whether c is a better suspect than s: a publish
// over an edit, then the later change (then the larger id, for a stable
// choice).
func suspectBefore(s, c ThemeChange) bool {
	sp, cp := s.Topic == ThemeTopicPublish, c.Topic == ThemeTopicPublish
	if sp != cp {
		return cp
	}
	if !c.At.Equal(s.At) {
		return c.At.After(s.At)
	}
	return c.ID > s.ID
}

// RankingPoint is a keyword's position on a day.
type RankingPoint struct {
	Date     string // YYYY-MM-DD
	Position float64
}

// TrackedKeyword is a keyword and URL with its rankings (in any order).
type TrackedKeyword struct {
	ID, Keyword, URL string
	Rankings         []RankingPoint
}

// KeywordDrop is a keyword that dropped after a theme change.
type KeywordDrop struct {
	KeywordID, Keyword, URL string
	Before                  float64 // the baseline position
	BeforeDate              string
	After                   float64 // the worst position in the window
	AfterDate               string
	// Change is Before − After, as the keyword list reports it: negative,
	// the URL moved down.
	Change float64
}

// ThemeIncident is a theme change day the rule flags.
type ThemeIncident struct {
	ThemeChangeDay
	Compared int           // keywords with a baseline and a ranking in the window
	Dropped  []KeywordDrop // the largest drop first, then by keyword
	Severity string        // SeverityP1..P3 by the share of compared keywords that dropped
}

// Detect applies the rule to one change day and the shop's keywords: each
// keyword with a baseline (its last ranking dated in [BaselineFrom, Day))
// and at least one ranking in [WindowFrom, WindowTo] is compared, its worst
// window position against the baseline. The day is an incident when at
// least MinKeywords and at least MinShare of the compared keywords lost
// MinDrop positions or more. Severity: P1 when half or more of the
// compared keywords dropped, P2 from a quarter, P3 below.
func (r ThemeIncidentRule) Detect(day ThemeChangeDay, keywords []TrackedKeyword) (ThemeIncident, bool) {
	inc := ThemeIncident{ThemeChangeDay: day}
	for _, k := range keywords {
		var base, worst *RankingPoint
		for i := range k.Rankings {
			p := &k.Rankings[i]
			switch {
			case p.Date >= day.BaselineFrom && p.Date < day.Day:
				if base == nil || p.Date > base.Date {
					base = p
				}
			case p.Date >= day.WindowFrom && p.Date <= day.WindowTo:
				if worst == nil || p.Position > worst.Position || (p.Position == worst.Position && p.Date < worst.Date) {
					worst = p
				}
			}
		}
		if base == nil || worst == nil {
			continue
		}
		inc.Compared++
		if change := roundPositions(base.Position - worst.Position); -change >= r.MinDrop {
			inc.Dropped = append(inc.Dropped, KeywordDrop{KeywordID: k.ID, Keyword: k.Keyword, URL: k.URL, Before: base.Position,
				BeforeDate: base.Date, After: worst.Position, AfterDate: worst.Date, Change: change})
		}
	}
	n := len(inc.Dropped)
	if n == 0 || n < r.MinKeywords || float64(n) < r.MinShare*float64(inc.Compared) {
		return ThemeIncident{}, false
	}
	slices.SortFunc(inc.Dropped, func(a, b KeywordDrop) int {
		return cmp.Or(cmp.Compare(a.Change, b.Change), cmp.Compare(a.Keyword, b.Keyword), cmp.Compare(a.KeywordID, b.KeywordID))
	})
	switch share := float64(n) / float64(inc.Compared); {
	case share >= 0.5:
		inc.Severity = SeverityP1
	case share >= 0.25:
		inc.Severity = SeverityP2
	default:
		inc.Severity = SeverityP3
	}
	return inc, true
}

// roundPositions rounds a position difference to hundredths, as the
// keyword read model does, so 7.5 − 4.2 is 3.3.
func roundPositions(v float64) float64 { return math.Round(v*100) / 100 }
