package campaigns

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

// Queries reads the audiences and campaigns read model.
type Queries struct{ db *sql.DB }

// NewQueries returns the queries of the read model in db.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Audience is a saved audience.
type Audience struct {
	ID, ShopID, Name string
	Filters          domain.AudienceFilters
	CreatedAt        time.Time
	// Pos is the log position of the AudienceCreated event.
	Pos int64
}

// Campaign is a campaign with its status; while paused, why
// (domain.PauseReasons) and since when (zero otherwise).
type Campaign struct {
	ID, ShopID, Name, AudienceID, Channel, TemplateID, Status string
	PausedReason                                              string
	CreatedAt, UpdatedAt, LaunchedAt, PausedAt, CompletedAt   time.Time
	// Content is what the messages say (nil when the campaign was
	// created without).
	Content *domain.MessageContent
	// TemplateName and TemplateLanguage are the WhatsApp template as
	// resolved at launch.
	TemplateName, TemplateLanguage string
	// Recipients is the audience snapshot's size at launch; the skipped
	// counts are the audience's customers left out (no consent on the
	// channel, no address for it).
	Recipients, SkippedNoConsent, SkippedNoAddress int
	// Counts are the outcomes of its messages so far: the messaging read
	// model's (messaging.Queries.CampaignCounts), filled by the caller.
	Counts Counts
	// Pos is the log position of the CampaignCreated event.
	Pos int64
}

// Counts are the outcomes of a campaign's messages (see
// messaging.CampaignCounts).
type Counts struct {
	Sent, Delivered, Read, Failed, Skipped, OptedOut int
}

// Key is a place in a list ordered by creation: the log position of the
// row's creating event and its id. Lists sort "created_at" by that
// position (log order, which agrees with created_at but never ties or
// goes back with the clock), so a walk never skips or repeats a row while
// new rows arrive, and cursors stay valid across restarts and rebuilds.
type Key struct {
	Pos int64  `json:"pos"`
	ID  string `json:"id"`
}

// Page selects a page of a list: after After (nil for the first page),
// newest first when Desc, at most Limit rows.
type Page struct {
	Desc  bool
	After *Key
	Limit int
}

const audienceColumns = `audience_id, shop_id, name, filters, created_at, created_pos`

// Audience returns a shop's audience (not found for another shop's).
func (q *Queries) Audience(ctx context.Context, shop, id string) (*Audience, error) {
	a, err := scanAudience(q.db.QueryRowContext(ctx, `SELECT `+audienceColumns+` FROM audiences WHERE shop_id = ? AND audience_id = ?`, shop, id))
	if err := readmodel.FindError(err, "audience"); err != nil {
		return nil, err
	}
	return &a, nil
}

// Audiences returns a page of a shop's audiences and the key to continue
// from when more follow.
func (q *Queries) Audiences(ctx context.Context, shop string, p Page) ([]Audience, *Key, error) {
	query, args := p.sql(`SELECT `+audienceColumns+` FROM audiences`, "audience_id", []string{"shop_id = ?"}, []any{shop})
	rows, err := readmodel.List(ctx, q.db, "audiences", scanAudience, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, p.Limit, func(a *Audience) Key { return Key{Pos: a.Pos, ID: a.ID} })
}

// AudiencesByID returns the shop's audiences among ids in one read (in no
// particular order); an id the shop does not have is left out.
func (q *Queries) AudiencesByID(ctx context.Context, shop string, ids []string) ([]Audience, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{shop}
	for _, id := range ids {
		args = append(args, id)
	}
	query := `SELECT ` + audienceColumns + ` FROM audiences WHERE shop_id = ? AND audience_id IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `)`
	return readmodel.List(ctx, q.db, "audiences", scanAudience, query, args...)
}

func scanAudience(s readmodel.Scanner) (Audience, error) {
	var a Audience
	var filters string
	var created int64
	if err := s.Scan(&a.ID, &a.ShopID, &a.Name, &filters, &created, &a.Pos); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(filters), &a.Filters); err != nil {
		return a, fmt.Errorf("audience %s filters: %w", a.ID, err)
	}
	a.CreatedAt = readmodel.Time(created)
	return a, nil
}

const campaignColumns = `c.campaign_id, c.shop_id, c.name, c.audience_id, c.channel, c.template_id, c.status, c.created_at,
	c.updated_at, c.launched_at, c.created_pos, c.paused_reason, c.paused_at, c.content, c.template_name, c.template_language,
	c.recipients, c.skipped_no_consent, c.skipped_no_address, c.completed_at`

const campaignFrom = ` FROM campaigns c`

// Campaign returns a shop's campaign (not found for another shop's).
func (q *Queries) Campaign(ctx context.Context, shop, id string) (*Campaign, error) {
	c, err := scanCampaign(q.db.QueryRowContext(ctx, `SELECT `+campaignColumns+campaignFrom+` WHERE c.shop_id = ? AND c.campaign_id = ?`, shop, id))
	if err := readmodel.FindError(err, "campaign"); err != nil {
		return nil, err
	}
	return &c, nil
}

// Campaigns returns a page of a shop's campaigns (of one status when
// status is not "") and the key to continue from when more follow.
func (q *Queries) Campaigns(ctx context.Context, shop, status string, p Page) ([]Campaign, *Key, error) {
	conds, args := []string{"c.shop_id = ?"}, []any{shop}
	if status != "" {
		conds, args = append(conds, "c.status = ?"), append(args, status)
	}
	query, args := p.sql(`SELECT `+campaignColumns+campaignFrom, "c.campaign_id", conds, args)
	rows, err := readmodel.List(ctx, q.db, "campaigns", scanCampaign, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, p.Limit, func(c *Campaign) Key { return Key{Pos: c.Pos, ID: c.ID} })
}

func scanCampaign(s readmodel.Scanner) (Campaign, error) {
	var c Campaign
	var created, updated, launched, paused, completed int64
	var content string
	err := s.Scan(&c.ID, &c.ShopID, &c.Name, &c.AudienceID, &c.Channel, &c.TemplateID, &c.Status, &created, &updated, &launched, &c.Pos,
		&c.PausedReason, &paused, &content, &c.TemplateName, &c.TemplateLanguage, &c.Recipients, &c.SkippedNoConsent,
		&c.SkippedNoAddress, &completed)
	if err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt, c.LaunchedAt, c.PausedAt = readmodel.Time(created), readmodel.Time(updated), readmodel.Time(launched),
		readmodel.Time(paused)
	c.CompletedAt = readmodel.Time(completed)
	if content != "" {
		c.Content = &domain.MessageContent{}
		if err := json.Unmarshal([]byte(content), c.Content); err != nil {
			return c, fmt.Errorf("campaign %s content: %w", c.ID, err)
		}
	}
	return c, nil
}

// sql completes base (a SELECT … FROM) with conds, the page's start, the
// (created_pos, id) order and a limit one row over the page, to tell
// whether more rows follow.
func (p Page) sql(base, idCol string, conds []string, args []any) (string, []any) {
	dir, cmp := "ASC", ">"
	if p.Desc {
		dir, cmp = "DESC", "<"
	}
	if p.After != nil {
		conds = append(conds, fmt.Sprintf("(created_pos, %s) %s (?, ?)", idCol, cmp))
		args = append(args, p.After.Pos, p.After.ID)
	}
	args = append(args, p.Limit+1)
	return fmt.Sprintf("%s WHERE %s ORDER BY created_pos %s, %s %s LIMIT ?", base, strings.Join(conds, " AND "), dir, idCol, dir), args
}
