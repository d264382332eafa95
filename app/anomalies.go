package app

import (
	"context"
	"net/netip"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/anomalies"
)

// anomalyRaiser is the anomaly reactor (projections/anomalies): it raises
// and resolves the shops' anomalies through RaiseAnomaly and
// ResolveAnomaly (system actor, the triggering event's id as cause and
// correlation id). Without commands it only lists its name and table.
func anomalyRaiser(d Deps) projections.Projector {
	if d.Commands == nil {
		return anomalies.Projector(d.Codec, nil, nil)
	}
	cmds := d.Commands
	raise := func(ctx context.Context, draft domain.AnomalyDraft) error {
		_, _, err := cmds.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: draft},
			commands.Meta{RequestID: draft.Cause, Actor: "system:anomalies", Source: "system"})
		return err
	}
	resolve := func(ctx context.Context, shop, key string, cause anomalies.Trigger, reason string) error {
		_, _, err := cmds.ResolveAnomaly(ctx, commands.ResolveAnomaly{ShopID: shop, DedupeKey: key, Cause: cause.ID, Reason: reason,
			CausePosition: cause.Position}, commands.Meta{RequestID: cause.ID, Actor: "system:anomalies", Source: "system"})
		return err
	}
	return anomalies.Projector(d.Codec, raise, resolve)
}

// bruteForceAlert is an address that crossed the brute-force guard's
// alert threshold (1000 attempts in 24 hours), at a time of the guard's
// clock.
type bruteForceAlert struct {
	ip netip.Addr
	at time.Time
}

// maxPendingAlerts bounds the brute-force alerts waiting for their
// anomaly: the guard alerts once per address per day, so more than this
// at once is a distributed flood, and the alerts beyond it are counted in
// the log line only (the callback must not block).
const maxPendingAlerts = 256

// onBruteForceAlert is the authenticator's OnAlert: it hands the address
// to the brute_force_alerts job without blocking. The address is personal
// data: it goes into the anomaly (sealed in the log), never into a log
// line.
func (a *App) onBruteForceAlert(now func() time.Time) func(netip.Addr) {
	return func(ip netip.Addr) {
		select {
		case a.bruteForce <- bruteForceAlert{ip: ip, at: now()}:
			a.Logger.Error().Str("alert", "brute_force").Msg("1000 failed authentications in 24 hours from one client address")
		default:
			a.Logger.Error().Str("alert", "brute_force").
				Msg("1000 failed authentications in 24 hours from one client address; too many alerts at once, no anomaly raised")
		}
	}
}

// bruteForceAlertsJob raises an operator anomaly (P1 auth_brute_force, no
// shop) for each brute-force alert, until ctx ends: key and cause
// auth_failures:<address>:<UTC day the 24-hour window began>, so an
// address raises one per window however often the guard alerts (several
// servers sharing one Redis guard, a restart).
func bruteForceAlertsJob(a *App) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case al := <-a.bruteForce:
				if _, _, err := a.Commands.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: BruteForceAnomaly(al.ip, al.at)},
					commands.Meta{Actor: "system:auth_guard", Source: "system"}); err != nil && ctx.Err() == nil {
					a.Logger.Error().Err(err).Str("alert", "brute_force").Msg("raising the brute-force anomaly")
				}
			}
		}
	}
}

// BruteForceAnomaly is the operator anomaly of an address that crossed the
// alert threshold at at: its key and cause name the address and the UTC
// day its 24-hour window began.
func BruteForceAnomaly(ip netip.Addr, at time.Time) domain.AnomalyDraft {
	key := BruteForceKey(ip, at)
	return domain.AnomalyDraft{Severity: domain.SeverityP1, Kind: domain.AnomalyAuthBruteForce,
		Title: "1,000 failed authentications in 24 hours from one address",
		Summary: "One client address made 1,000 or more authentication attempts in 24 hours that failed or were refused " +
			"(bad API tokens, public keys, image-API keys or webhook tokens). The brute-force guard throttles and blocks it; " +
			"check whether it is an attack or a misconfigured integration, and block it upstream if need be.",
		Resources: []domain.AnomalyResource{{Type: "ip_address", ID: ip.WithZone("").Unmap().String()}},
		DedupeKey: key, Cause: key}
}

// BruteForceKey is the dedupe key of an address's brute-force anomaly:
// auth_failures:<address>:<UTC day of at minus 24 hours>.
func BruteForceKey(ip netip.Addr, at time.Time) string {
	return "auth_failures:" + ip.WithZone("").Unmap().String() + ":" + at.UTC().Add(-24*time.Hour).Format(time.DateOnly)
}
