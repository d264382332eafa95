package journeys

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// FlowView is a shop's settings of one built-in flow: as last configured,
// or domain.DefaultFlowSettings with a zero ConfiguredAt when the shop
// never configured it.
type FlowView struct {
	ShopID, Name string
	Settings     domain.FlowSettings
	ConfiguredAt time.Time
}

// FlowFromEvent is the view a FlowConfigured event makes, for answering an
// edit before the read model caught up; ConfiguredAt is kept to the
// microsecond, as the read model stores it, so that the answer and a
// later read agree.
func FlowFromEvent(ev *domain.FlowConfigured) FlowView {
	return FlowView{ShopID: ev.ShopID, Name: ev.Flow, Settings: ev.Settings, ConfiguredAt: ev.ConfiguredAt.Truncate(time.Microsecond)}
}

// Flows returns the shop's settings of every built-in flow, in
// domain.Flows order.
func (q *Queries) Flows(ctx context.Context, shop string) ([]FlowView, error) {
	stored, err := readmodel.List(ctx, q.db, "flow settings", scanFlow,
		`SELECT shop_id, flow, settings, configured_at FROM flow_settings WHERE shop_id = ?`, shop)
	if err != nil {
		return nil, err
	}
	out := make([]FlowView, 0, len(domain.Flows()))
	for _, name := range domain.Flows() {
		i := slices.IndexFunc(stored, func(v FlowView) bool { return v.Name == name })
		if i < 0 {
			out = append(out, FlowView{ShopID: shop, Name: name, Settings: domain.DefaultFlowSettings(name)})
			continue
		}
		out = append(out, stored[i])
	}
	return out, nil
}

// Flow returns the shop's settings of one built-in flow; a name that is no
// built-in flow is not found.
func (q *Queries) Flow(ctx context.Context, shop, name string) (FlowView, error) {
	if !slices.Contains(domain.Flows(), name) {
		return FlowView{}, domain.NotFound("flow")
	}
	row := q.db.QueryRowContext(ctx, `SELECT shop_id, flow, settings, configured_at FROM flow_settings WHERE shop_id = ? AND flow = ?`,
		shop, name)
	v, err := scanFlow(row)
	if errors.Is(err, sql.ErrNoRows) {
		return FlowView{ShopID: shop, Name: name, Settings: domain.DefaultFlowSettings(name)}, nil
	}
	if err != nil {
		return FlowView{}, fmt.Errorf("find flow: %w", err)
	}
	return v, nil
}

func scanFlow(s readmodel.Scanner) (FlowView, error) {
	var v FlowView
	var settings string
	var at int64
	if err := s.Scan(&v.ShopID, &v.Name, &settings, &at); err != nil {
		return FlowView{}, err
	}
	v.ConfiguredAt = readmodel.Time(at)
	if err := json.Unmarshal([]byte(settings), &v.Settings); err != nil {
		return FlowView{}, fmt.Errorf("flow %s settings: %w", v.Name, err)
	}
	return v, nil
}
