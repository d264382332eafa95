package intelligence

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the intelligence read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Keyword is a keyword and URL of a shop with its latest ranking and the
// one before (PreviousPosition nil when there is only one).
type Keyword struct {
	ID, ShopID, Keyword, URL string
	Position                 float64
	PositionDate             string
	PreviousPosition         *float64
	PreviousDate             *string
	Change                   float64 // previous − latest: positive means the URL moved up
	SearchVolume             int64
	Clicks, Impressions      int64
	Rankings                 int // rankings recorded
	Version                  uint64
}

// Sort keys of the keyword list.
const (
	KeywordSortPosition     = "position"
	KeywordSortChange       = "change"
	KeywordSortSearchVolume = "search_volume"
	KeywordSortKeyword      = "keyword"
)

var keywordSortColumns = map[string]string{
	KeywordSortPosition: "position", KeywordSortChange: "change", KeywordSortSearchVolume: "search_volume", KeywordSortKeyword: "keyword",
}

// KeywordSorts lists the keyword list's sort keys.
func KeywordSorts() []string {
	return []string{KeywordSortPosition, KeywordSortChange, KeywordSortSearchVolume, KeywordSortKeyword}
}

// Key is a position in a sorted list: the sort column's value (Num for
// numbers, Str for text) and the row id.
type Key struct {
	Num float64 `json:"n,omitempty"`
	Str string  `json:"s,omitempty"`
	ID  string  `json:"id"`
}

// KeywordListQuery selects a page of a shop's keywords.
type KeywordListQuery struct {
	Shop    string
	Keyword string // exact (normalised) keyword when not empty
	Sort    string // one of the KeywordSort constants
	Desc    bool
	After   *Key
	Limit   int
}

const keywordColumns = `keyword_id, shop_id, keyword, url, position, position_date, previous_position, previous_date, change,
	search_volume, clicks, impressions, rankings, version`

// Keyword returns a keyword of a shop; one of another shop is not found.
func (q *Queries) Keyword(ctx context.Context, shop, id string) (*Keyword, error) {
	k, err := scanKeyword(q.db.QueryRowContext(ctx, `SELECT `+keywordColumns+` FROM seo_keywords WHERE keyword_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "keyword"); err != nil {
		return nil, err
	}
	return &k, nil
}

// Keywords returns up to Limit keywords after After in the query's order
// (ties broken by id) and the key to continue from when there are more.
func (q *Queries) Keywords(ctx context.Context, lq KeywordListQuery) ([]Keyword, *Key, error) {
	col := keywordSortColumns[lq.Sort]
	if col == "" || lq.Limit < 1 {
		return nil, nil, domain.Invalid("sort", "unknown sort field or bad limit")
	}
	where, args := []string{"shop_id = ?"}, []any{lq.Shop}
	if lq.Keyword != "" {
		where, args = append(where, "keyword = ?"), append(args, domain.NormalizeKeyword(lq.Keyword))
	}
	rows, err := page(ctx, q.db, "keywords", scanKeyword, "seo_keywords", keywordColumns, "keyword_id", col, where, args, lq.Desc, lq.After, lq.Limit)
	if err != nil || len(rows) <= lq.Limit {
		return rows, nil, err
	}
	rows = rows[:lq.Limit]
	last := rows[len(rows)-1]
	k := &Key{ID: last.ID}
	switch lq.Sort {
	case KeywordSortKeyword:
		k.Str = last.Keyword
	case KeywordSortChange:
		k.Num = last.Change
	case KeywordSortSearchVolume:
		k.Num = float64(last.SearchVolume)
	default:
		k.Num = last.Position
	}
	return rows, k, nil
}

// page runs a keyset-paginated query of up to limit+1 rows.
func page[T any](ctx context.Context, db *sql.DB, what string, scan func(readmodel.Scanner) (T, error), table, columns, idCol, col string,
	where []string, args []any, desc bool, after *Key, limit int) ([]T, error) {
	dir, cmp := "ASC", ">"
	if desc {
		dir, cmp = "DESC", "<"
	}
	if after != nil {
		var v any = after.Num
		if after.Str != "" {
			v = after.Str
		}
		where = append(where, fmt.Sprintf("(%s, %s) %s (?, ?)", col, idCol, cmp))
		args = append(args, v, after.ID)
	}
	args = append(args, limit+1)
	return readmodel.List(ctx, db, what, scan, `SELECT `+columns+` FROM `+table+` WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY %s %s, %s %s LIMIT ?`, col, dir, idCol, dir), args...)
}

func scanKeyword(s readmodel.Scanner) (Keyword, error) {
	var k Keyword
	err := s.Scan(&k.ID, &k.ShopID, &k.Keyword, &k.URL, &k.Position, &k.PositionDate, &k.PreviousPosition, &k.PreviousDate,
		&k.Change, &k.SearchVolume, &k.Clicks, &k.Impressions, &k.Rankings, &k.Version)
	return k, err
}

// RankingsBetween returns a shop's keywords with their rankings dated from
// from to to (inclusive, YYYY-MM-DD), by keyword id; keywords without a
// ranking in the range are left out.
func (q *Queries) RankingsBetween(ctx context.Context, shop, from, to string) ([]domain.TrackedKeyword, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT r.keyword_id, k.keyword, k.url, r.date, r.position FROM seo_rankings r
		JOIN seo_keywords k ON k.keyword_id = r.keyword_id
		WHERE r.shop_id = ? AND r.date >= ? AND r.date <= ? ORDER BY r.keyword_id, r.date`, shop, from, to)
	if err != nil {
		return nil, fmt.Errorf("rankings: %w", err)
	}
	defer rows.Close()
	var out []domain.TrackedKeyword
	for rows.Next() {
		var id, keyword, url string
		var p domain.RankingPoint
		if err := rows.Scan(&id, &keyword, &url, &p.Date, &p.Position); err != nil {
			return nil, fmt.Errorf("rankings: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].ID != id {
			out = append(out, domain.TrackedKeyword{ID: id, Keyword: keyword, URL: url})
		}
		out[len(out)-1].Rankings = append(out[len(out)-1].Rankings, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rankings: %w", err)
	}
	return out, nil
}

// Run is a decision-intelligence run of a shop.
type Run struct {
	ID, ShopID, Status, Trigger, Reason string
	Recommendations                     []domain.Recommendation
	StartedAt                           time.Time
	FinishedAt                          time.Time // zero while running
	Version                             uint64
}

// RunListQuery selects a page of a shop's runs, newest first.
type RunListQuery struct {
	Shop   string
	Status string // "" for any
	Desc   bool
	After  *Key
	Limit  int
}

const runColumns = `run_id, shop_id, status, trigger_name, reason, recommendations, started_at, finished_at, version`

// Run returns a run of a shop; one of another shop is not found.
func (q *Queries) Run(ctx context.Context, shop, id string) (*Run, error) {
	r, err := scanRun(q.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM decision_runs WHERE run_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "decision run"); err != nil {
		return nil, err
	}
	return &r, nil
}

// Runs returns up to Limit runs after After ordered by start time (ties
// broken by id) and the key to continue from when there are more.
func (q *Queries) Runs(ctx context.Context, lq RunListQuery) ([]Run, *Key, error) {
	if lq.Limit < 1 {
		return nil, nil, domain.Invalid("limit", "limit must be positive")
	}
	where, args := []string{"shop_id = ?"}, []any{lq.Shop}
	if lq.Status != "" {
		where, args = append(where, "status = ?"), append(args, lq.Status)
	}
	rows, err := page(ctx, q.db, "decision runs", scanRun, "decision_runs", runColumns, "run_id", "started_at", where, args, lq.Desc, lq.After, lq.Limit)
	if err != nil || len(rows) <= lq.Limit {
		return rows, nil, err
	}
	rows = rows[:lq.Limit]
	last := rows[len(rows)-1]
	return rows, &Key{Num: float64(readmodel.Micros(last.StartedAt)), ID: last.ID}, nil
}

func scanRun(s readmodel.Scanner) (Run, error) {
	var r Run
	var recs string
	var started, finished int64
	if err := s.Scan(&r.ID, &r.ShopID, &r.Status, &r.Trigger, &r.Reason, &recs, &started, &finished, &r.Version); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt = readmodel.Time(started), readmodel.Time(finished)
	if err := json.Unmarshal([]byte(recs), &r.Recommendations); err != nil {
		return r, fmt.Errorf("run %s recommendations: %w", r.ID, err)
	}
	return r, nil
}
