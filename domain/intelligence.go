package domain

import (
	"errors"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// intelligenceEvents lists the intelligence event types: SEO keyword
// rankings and decision-intelligence runs.
func intelligenceEvents() []EventSpec {
	return []EventSpec{
		{Name: "KeywordRankingRecorded", Version: 1, New: func() Event { return &KeywordRankingRecorded{} }},
		{Name: "DecisionRunStarted", Version: 1, New: func() Event { return &DecisionRunStarted{} }},
		{Name: "DecisionRunCompleted", Version: 1, New: func() Event { return &DecisionRunCompleted{} }},
		{Name: "DecisionRunFailed", Version: 1, New: func() Event { return &DecisionRunFailed{} }},
	}
}

// Id prefixes of the intelligence resources.
const (
	PrefixKeyword     = "kw_"
	PrefixDecisionRun = "run_"
)

// SEO keyword limits.
const (
	MaxKeywordLength = 255
	MaxKeywordURL    = 2048
	MaxKeywordCount  = 1_000_000_000 // search volume, clicks, impressions
	MaxKeywordRank   = 1000.0        // position
	// RankingDateLayout is the layout of a ranking's date.
	RankingDateLayout = "2006-01-02"
)

// KeywordID derives the id of a shop's keyword ranking for one URL: the
// same shop, keyword (normalised) and URL always give the same kw_… id.
func KeywordID(shopID, keyword, url string) string {
	return IDFromExternal(PrefixKeyword, "seo_keyword", shopID, NormalizeKeyword(keyword)+"\x00"+url)
}

// KeywordStream is the stream of one keyword's rankings.
func KeywordStream(id string) string { return "seo_keyword-" + id }

// DecisionRunStream is the stream of one decision-intelligence run.
func DecisionRunStream(id string) string { return "decision_run-" + id }

// Triggers of a decision-intelligence run.
const (
	TriggerCLI      = "cli"      // cgp di run, on demand
	TriggerSchedule = "schedule" // the daily run of the shop
)

// RunDayLayout is the layout of the UTC calendar day of a scheduled run.
const RunDayLayout = "2006-01-02"

// ScheduledRunID derives the id of a shop's scheduled run of a UTC day
// (YYYY-MM-DD): every server, and every attempt after a restart, names the
// day's run alike, so the log records it once.
func ScheduledRunID(shopID, day string) string {
	return IDFromExternal(PrefixDecisionRun, "decision_run_schedule", shopID, day)
}

// ErrRunStarted is the cause of the conflict returned when a shop's
// scheduled run of a day is already recorded (by another server, or before
// a restart).
var ErrRunStarted = errors.New("the scheduled decision run of the day is already started")

// NormalizeKeyword trims a search keyword, collapses its inner white space
// and lower-cases it: search engines treat keywords case-insensitively.
func NormalizeKeyword(k string) string {
	return strings.ToLower(strings.Join(strings.Fields(k), " "))
}

// KeywordRanking is one row of a ranking report: where a URL of the shop
// ranked for a keyword on a day. Keywords are search terms, not personal
// data.
type KeywordRanking struct {
	Keyword      string  `json:"keyword"`
	URL          string  `json:"url"`
	Position     float64 `json:"position"` // average position, 1 is the top
	SearchVolume int64   `json:"search_volume"`
	Clicks       int64   `json:"clicks"`
	Impressions  int64   `json:"impressions"`
	Date         string  `json:"date"` // YYYY-MM-DD
}

// Validate checks a ranking and normalises its keyword; a failure names the
// field.
func (r *KeywordRanking) Validate() error {
	r.Keyword = NormalizeKeyword(r.Keyword)
	switch {
	case r.Keyword == "" || utf8.RuneCountInString(r.Keyword) > MaxKeywordLength || !utf8.ValidString(r.Keyword):
		return Invalid("keyword", "keyword must be 1 to %d characters of UTF-8", MaxKeywordLength)
	case !validRankingURL(r.URL):
		return Invalid("url", "url must be an absolute http(s) URL of at most %d characters", MaxKeywordURL)
	case math.IsNaN(r.Position) || r.Position < 1 || r.Position > MaxKeywordRank:
		return Invalid("position", "position must be a number from 1 to %g", MaxKeywordRank)
	case r.SearchVolume < 0 || r.SearchVolume > MaxKeywordCount:
		return Invalid("search_volume", "search_volume must be an integer from 0 to %d", MaxKeywordCount)
	case r.Clicks < 0 || r.Clicks > MaxKeywordCount:
		return Invalid("clicks", "clicks must be an integer from 0 to %d", MaxKeywordCount)
	case r.Impressions < 0 || r.Impressions > MaxKeywordCount:
		return Invalid("impressions", "impressions must be an integer from 0 to %d", MaxKeywordCount)
	case r.Clicks > r.Impressions:
		return Invalid("clicks", "clicks cannot exceed impressions")
	}
	d, err := time.Parse(RankingDateLayout, r.Date)
	if err != nil || d.Format(RankingDateLayout) != r.Date {
		return Invalid("date", "date must be a calendar date YYYY-MM-DD")
	}
	return nil
}

func validRankingURL(u string) bool {
	if len(u) > MaxKeywordURL || !utf8.ValidString(u) || strings.ContainsAny(u, " \t\r\n") {
		return false
	}
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "http://")
	}
	return ok && rest != "" && rest[0] != '/'
}

// KeywordRankingRecorded: a keyword's ranking of one day was imported. Its
// event id derives from shop, keyword, URL and date, so importing the same
// report again appends nothing.
type KeywordRankingRecorded struct {
	KeywordID string `json:"keyword_id"`
	ShopID    string `json:"shop_id"`
	KeywordRanking
}

// EventType implements Event.
func (KeywordRankingRecorded) EventType() string { return "KeywordRankingRecorded" }

// SEOKeyword is the aggregate of one keyword's rankings: the dates already
// recorded.
type SEOKeyword struct {
	Dates map[string]bool
}

// Apply folds an event.
func (k *SEOKeyword) Apply(e Event) {
	if ev, ok := e.(*KeywordRankingRecorded); ok {
		if k.Dates == nil {
			k.Dates = map[string]bool{}
		}
		k.Dates[ev.Date] = true
	}
}

// Decision-run statuses.
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
)

// DecisionRunStatuses lists the statuses of a decision-intelligence run.
func DecisionRunStatuses() []string { return []string{RunRunning, RunCompleted, RunFailed} }

// Recommendation kinds.
const (
	// RecommendWinBack: customers at risk worth a win-back campaign.
	RecommendWinBack = "win_back_at_risk_customers"
	// RecommendReorder: variants whose stock covers fewer days than their
	// reorder lead time at the current sales velocity.
	RecommendReorder = "reorder_low_stock"
	// RecommendTemplateBlocked: campaigns under way whose WhatsApp message
	// template the platform paused or rejected.
	RecommendTemplateBlocked = "campaigns_blocked_by_template"
)

// Recommendation is one finding of a decision-intelligence run with the
// figures behind it. Items name the resources concerned (customer or
// variant ids, never personal data), each with its own figures.
type Recommendation struct {
	Kind    string             `json:"kind"`
	Summary string             `json:"summary"`
	Figures map[string]float64 `json:"figures"`
	Items   []RecommendedItem  `json:"items"`
}

// RecommendedItem is a resource a recommendation concerns.
type RecommendedItem struct {
	Type    string             `json:"type"` // customer, variant, campaign
	ID      string             `json:"id"`
	Figures map[string]float64 `json:"figures"`
}

// DecisionRunStarted: a decision-intelligence run began for a shop.
type DecisionRunStarted struct {
	RunID     string    `json:"run_id"`
	ShopID    string    `json:"shop_id"`
	Trigger   string    `json:"trigger"` // cli, schedule
	StartedAt time.Time `json:"started_at"`
}

// EventType implements Event.
func (DecisionRunStarted) EventType() string { return "DecisionRunStarted" }

// DecisionRunCompleted: a run finished with its recommendations.
type DecisionRunCompleted struct {
	RunID           string           `json:"run_id"`
	ShopID          string           `json:"shop_id"`
	Recommendations []Recommendation `json:"recommendations"`
	FinishedAt      time.Time        `json:"finished_at"`
}

// EventType implements Event.
func (DecisionRunCompleted) EventType() string { return "DecisionRunCompleted" }

// DecisionRunFailed: a run could not finish; Reason is safe to show.
type DecisionRunFailed struct {
	RunID      string    `json:"run_id"`
	ShopID     string    `json:"shop_id"`
	Reason     string    `json:"reason"`
	FinishedAt time.Time `json:"finished_at"`
}

// EventType implements Event.
func (DecisionRunFailed) EventType() string { return "DecisionRunFailed" }

// DecisionRun is the aggregate of a run: its status ("" when the run
// does not exist), trigger and start.
type DecisionRun struct {
	ShopID    string
	Status    string
	Trigger   string
	StartedAt time.Time
}

// Apply folds an event.
func (r *DecisionRun) Apply(e Event) {
	switch ev := e.(type) {
	case *DecisionRunStarted:
		r.ShopID, r.Status, r.Trigger, r.StartedAt = ev.ShopID, RunRunning, ev.Trigger, ev.StartedAt
	case *DecisionRunCompleted:
		r.Status = RunCompleted
	case *DecisionRunFailed:
		r.Status = RunFailed
	}
}

// Finish checks that the run of shop may finish now.
func (r *DecisionRun) Finish(shop string) error {
	if r.Status == "" || r.ShopID != shop {
		return NotFound("decision run")
	}
	if r.Status != RunRunning {
		return Conflict("decision run is already %s", r.Status)
	}
	return nil
}
