package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections/erasure"
	"github.com/cgp-platform/cgp/vault"
)

// eraseCustomer is the erase pipeline the erasure reactor runs for one
// customers/redact: it shreds the customer's keys, exits its journey
// enrolments and records CustomerErased. Every step is idempotent (the
// commands' ids derive from the request), so a redelivered request repeats
// it harmlessly. Nil without commands (a replay).
func eraseCustomer(d Deps) erasure.Eraser {
	if d.Commands == nil {
		return nil
	}
	return func(ctx context.Context, r erasure.Request) (domain.CustomerErased, eventlog.Position, error) {
		return erase(ctx, d.Vault, d.Commands, r)
	}
}

func erase(ctx context.Context, v vault.Vault, cmds *commands.Handler, r erasure.Request) (domain.CustomerErased, eventlog.Position, error) {
	subjects, messaging := domain.ErasureSubjects(r.ShopID, r.Customer, r.ExternalOrders)
	known := false
	for _, s := range []string{r.Customer.CustomerID, messaging} {
		if s == "" {
			continue
		}
		_, err := v.DataKey(ctx, r.ShopID, s, false)
		switch {
		case err == nil, errors.Is(err, vault.ErrShredded):
			known = true
		case !errors.Is(err, vault.ErrNotFound):
			return domain.CustomerErased{}, 0, fmt.Errorf("look up key: %w", err)
		}
	}
	for _, s := range subjects {
		if err := v.Shred(ctx, r.ShopID, s); err != nil {
			return domain.CustomerErased{}, 0, fmt.Errorf("shred key: %w", err)
		}
	}
	meta := commands.Meta{RequestID: r.CorrelationID, Actor: "system:erasure", Source: "system"}
	exited := 0
	for _, j := range r.Journeys {
		for _, cus := range []string{r.Customer.CustomerID, messaging} {
			if cus == "" {
				continue
			}
			res, err := cmds.ExitEnrollment(ctx, commands.ExitEnrollment{ShopID: r.ShopID, JourneyID: j, CustomerID: cus,
				Reason: domain.ExitCustomerErased, Cause: r.EventID}, meta)
			if err != nil {
				return domain.CustomerErased{}, 0, fmt.Errorf("exit enrollment: %w", err)
			}
			if res.ID != "" {
				exited++
			}
		}
	}
	ev := domain.CustomerErased{ShopID: r.ShopID, CustomerID: r.Customer.CustomerID, Subjects: subjects,
		MessagingCustomerID: messaging, Orders: r.Orders, RequestEventID: r.EventID, EnrollmentsExited: exited,
		Known: known}
	res, err := cmds.RecordCustomerErased(ctx, commands.RecordCustomerErased{Erased: ev}, meta)
	if err != nil {
		return domain.CustomerErased{}, 0, fmt.Errorf("record erasure: %w", err)
	}
	return ev, res.Position, nil
}
