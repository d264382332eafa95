package reviews

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the reviews read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Review is a row of the read model. Title, Body and AuthorName are ""
// once the author was erased (Redacted); Reply is "" without one.
type Review struct {
	ID, ShopID, CustomerID, ProductID, OrderID string
	Verified                                   bool
	Status                                     string
	Rating                                     int
	Title, Body, AuthorName                    string
	Reply                                      string
	RepliedAt                                  time.Time
	Reason                                     string
	Redacted                                   bool
	SubmittedAt                                time.Time
	// HelpfulCount counts the helpfulness votes (one per address).
	HelpfulCount int
}

// Key is a position in a list: the rating (for the rating sort) or the
// helpful count (for the helpfulness sort), the log position of the
// review's submission and its id.
type Key struct {
	R  int    `json:"r,omitempty"`
	H  int    `json:"h,omitempty"`
	P  int64  `json:"p"`
	ID string `json:"id"`
}

// Sorts of a list.
const (
	SortNewest = "created_at"
	SortRating = "rating"
	// SortHelpful orders by the helpful count, ties by the submission
	// (descending: the most helpful first, then the newest).
	SortHelpful = "helpful"
)

// ListQuery selects a page of a shop's reviews. Product, Status,
// Rating (1–5) and Verified filter when set; Public leaves out the erased
// authors' reviews (they have no text left to show, their rating still
// counts in the summary).
type ListQuery struct {
	Shop, Product, Status string
	Rating                int
	Verified              *bool
	Public                bool
	Sort                  string
	Desc                  bool
	After                 *Key
	Limit                 int
}

const columns = `review_id, shop_id, customer_id, product_id, order_id, verified, status, rating, title, body, author_name, reply,
	replied_at, reason, redacted, submitted_at, position, helpful_count`

// Reviews returns a page of reviews and the key to continue from when
// more follow.
func (q *Queries) Reviews(ctx context.Context, lq ListQuery) ([]Review, *Key, error) {
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	where, args := "shop_id = ?", []any{lq.Shop}
	if lq.Product != "" {
		where += " AND product_id = ?"
		args = append(args, lq.Product)
	}
	if lq.Status != "" {
		where += " AND status = ?"
		args = append(args, lq.Status)
	}
	if lq.Rating != 0 {
		where += " AND rating = ?"
		args = append(args, lq.Rating)
	}
	if lq.Verified != nil {
		where += " AND verified = ?"
		args = append(args, *lq.Verified)
	}
	if lq.Public {
		where += " AND redacted = 0"
	}
	order := fmt.Sprintf("position %s, review_id %s", dir, dir)
	if lq.Sort == SortRating {
		order = fmt.Sprintf("rating %s, position %s, review_id %s", dir, dir, dir)
		if lq.After != nil {
			where += fmt.Sprintf(" AND (rating, position, review_id) %s (?, ?, ?)", cmp)
			args = append(args, lq.After.R, lq.After.P, lq.After.ID)
		}
	} else if lq.Sort == SortHelpful {
		order = fmt.Sprintf("helpful_count %s, position %s, review_id %s", dir, dir, dir)
		if lq.After != nil {
			where += fmt.Sprintf(" AND (helpful_count, position, review_id) %s (?, ?, ?)", cmp)
			args = append(args, lq.After.H, lq.After.P, lq.After.ID)
		}
	} else if lq.After != nil {
		where += fmt.Sprintf(" AND (position, review_id) %s (?, ?)", cmp)
		args = append(args, lq.After.P, lq.After.ID)
	}
	rows, err := readmodel.List(ctx, q.db, "reviews", scanReview,
		fmt.Sprintf(`SELECT `+columns+` FROM reviews WHERE %s ORDER BY %s LIMIT ?`, where, order), append(args, lq.Limit+1)...)
	if err != nil {
		return nil, nil, err
	}
	page, next, err := readmodel.CutPage(rows, lq.Limit, func(k *keyed) Key { return k.key })
	out := make([]Review, len(page))
	for i := range page {
		out[i] = page[i].r
	}
	return out, next, err
}

// Review returns one review of a shop; another shop's is not found.
func (q *Queries) Review(ctx context.Context, shop, id string) (*Review, error) {
	k, err := scanReview(q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM reviews WHERE shop_id = ? AND review_id = ?`, shop, id))
	if err := readmodel.FindError(err, "review"); err != nil {
		return nil, err
	}
	return &k.r, nil
}

// Summary is the published reviews' rating summary: their count, average
// rating (0 without reviews) and the count per star (Histogram[0] is one
// star).
type Summary struct {
	Count     int
	Average   float64
	Histogram [5]int
}

// Summary summarizes a shop's published reviews, of one product when
// product is set. Erased authors' reviews count.
func (q *Queries) Summary(ctx context.Context, shop, product string) (Summary, error) {
	where, args := "shop_id = ? AND status = 'published'", []any{shop}
	if product != "" {
		where += " AND product_id = ?"
		args = append(args, product)
	}
	rows, err := q.db.QueryContext(ctx, `SELECT rating, COUNT(*) FROM reviews WHERE `+where+` GROUP BY rating`, args...)
	if err != nil {
		return Summary{}, fmt.Errorf("review summary: %w", err)
	}
	defer rows.Close()
	var s Summary
	sum := 0
	for rows.Next() {
		var rating, n int
		if err := rows.Scan(&rating, &n); err != nil {
			return Summary{}, fmt.Errorf("review summary: %w", err)
		}
		if rating >= 1 && rating <= 5 {
			s.Histogram[rating-1] += n
			s.Count += n
			sum += rating * n
		}
	}
	if err := rows.Err(); err != nil {
		return Summary{}, fmt.Errorf("review summary: %w", err)
	}
	if s.Count > 0 {
		s.Average = float64(sum) / float64(s.Count)
	}
	return s, nil
}

// Rule returns a shop's auto-publish rule and when it was set (zero and
// the default rule when the shop never set one).
func (q *Queries) Rule(ctx context.Context, shop string) (domain.ReviewRule, time.Time, error) {
	r := domain.DefaultReviewRule()
	var at int64
	err := q.db.QueryRowContext(ctx, `SELECT enabled, require_verified, min_rating, set_at FROM review_settings WHERE shop_id = ?`,
		shop).Scan(&r.Enabled, &r.RequireVerified, &r.MinRating, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.DefaultReviewRule(), time.Time{}, nil
	}
	if err != nil {
		return r, time.Time{}, fmt.Errorf("review rule: %w", err)
	}
	return r, readmodel.Time(at), nil
}

// TextsLeft counts the customer's reviews still holding personal data
// (0 once the erasure is complete).
func (q *Queries) TextsLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviews WHERE shop_id = ? AND customer_id = ? AND
		(title IS NOT NULL OR body IS NOT NULL OR author_name IS NOT NULL)`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("review texts left: %w", err)
	}
	return n, nil
}

type keyed struct {
	r   Review
	key Key
}

func scanReview(s readmodel.Scanner) (keyed, error) {
	var r Review
	var title, body, name, reply sql.NullString
	var replied, submitted, pos int64
	if err := s.Scan(&r.ID, &r.ShopID, &r.CustomerID, &r.ProductID, &r.OrderID, &r.Verified, &r.Status, &r.Rating, &title, &body,
		&name, &reply, &replied, &r.Reason, &r.Redacted, &submitted, &pos, &r.HelpfulCount); err != nil {
		return keyed{}, err
	}
	r.Title, r.Body, r.AuthorName, r.Reply = title.String, body.String, name.String, reply.String
	r.RepliedAt, r.SubmittedAt = readmodel.Time(replied), readmodel.Time(submitted)
	return keyed{r: r, key: Key{R: r.Rating, H: r.HelpfulCount, P: pos, ID: r.ID}}, nil
}
