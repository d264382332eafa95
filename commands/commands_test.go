package commands_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/internal/testenv"
)

func newHandler(t *testing.T) (*commands.Handler, *logsqlite.Log) {
	t.Helper()
	core := testenv.New(t, nil)
	return core.Commands, core.Log
}

var meta = commands.Meta{Actor: "test", Source: "cli"}

func streamLen(t *testing.T, l eventlog.Log, stream string) int {
	t.Helper()
	evs, err := l.ReadStream(context.Background(), stream, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func TestTenancyCommands(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	acc, err := h.CreateAccount(ctx, commands.CreateAccount{Name: "Agency", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateAccount(ctx, commands.CreateAccount{Name: "x", Plan: "platinum"}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bad plan: %v", err)
	}
	shop := commands.CreateShop{AccountID: acc.ID, Domain: "a.example.com", Plan: "agency", WebhookSecret: "0123456789abcdef"}
	s1, err := h.CreateShop(ctx, shop, meta)
	if err != nil {
		t.Fatal(err)
	}
	shop.Domain = "A.EXAMPLE.COM"
	if _, err := h.CreateShop(ctx, shop, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second shop on the same domain: %v", err)
	}
	shop.AccountID = "acc_missing"
	shop.Domain = "b.example.com"
	if _, err := h.CreateShop(ctx, shop, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("shop of a missing account: %v", err)
	}
	tok, err := h.IssueToken(ctx, commands.IssueToken{ShopID: s1.ID, Scopes: []string{"customers:read"}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if env, ok := domain.ParseAdminToken(tok.Token); !ok || env != "live" {
		t.Fatalf("token %q", tok.Token)
	}
	evs, _ := l.ReadStream(ctx, domain.TokenStream(tok.ID), 0, 10)
	if len(evs) != 1 || bytes.Contains(evs[0].Data, []byte(tok.Token)) {
		t.Fatal("the raw token reached the log")
	}
	if _, err := h.IssueToken(ctx, commands.IssueToken{ShopID: s1.ID, Scopes: []string{"customers:delete"}}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("unknown scope: %v", err)
	}
	if _, err := h.IssueToken(ctx, commands.IssueToken{ShopID: "shop_missing", Scopes: []string{"*"}}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("token of a missing shop: %v", err)
	}
}

func TestRecordCustomerIsIdempotentPerDelivery(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	cmd := commands.RecordCustomer{ShopID: "shop_1", Profile: domain.CustomerProfile{ExternalID: "7"},
		EventID: eventlog.DeterministicID("commerce", "shop_1", "delivery-1")}
	first, err := h.RecordCustomer(ctx, cmd, meta)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			again, err := h.RecordCustomer(ctx, cmd, meta)
			if err != nil || again.Position != first.Position {
				t.Errorf("repeat: %+v %v, first at %d", again, err, first.Position)
			}
		}()
	}
	wg.Wait()
	if n := streamLen(t, l, domain.CustomerStream(first.ID)); n != 1 {
		t.Fatalf("stream has %d events after repeats", n)
	}
	cmd.EventID = eventlog.DeterministicID("commerce", "shop_1", "delivery-2")
	if _, err := h.RecordCustomer(ctx, cmd, meta); err != nil {
		t.Fatal(err)
	}
	evs, _ := l.ReadStream(ctx, domain.CustomerStream(first.ID), 0, 10)
	if len(evs) != 2 || evs[0].Type != "CustomerCreated" || evs[1].Type != "CustomerUpdated" {
		t.Fatalf("stream = %v", evs)
	}
	if _, err := h.RecordCustomer(ctx, commands.RecordCustomer{ShopID: "shop_1"}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("no external id: %v", err)
	}
}

func TestConcurrentCommandsRetryOnConflict(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	c, err := h.RecordCustomer(ctx, commands.RecordCustomer{ShopID: "shop_1", Profile: domain.CustomerProfile{ExternalID: "9"}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.SetCustomerTags(ctx, commands.SetCustomerTags{ShopID: "shop_1", CustomerID: c.ID, Tags: []string{fmt.Sprint("t", i)}}, meta); err != nil {
				t.Errorf("tags %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if n := streamLen(t, l, domain.CustomerStream(c.ID)); n != 7 {
		t.Fatalf("stream has %d events, want 7", n)
	}
	if _, err := h.SetCustomerTags(ctx, commands.SetCustomerTags{ShopID: "shop_2", CustomerID: c.ID, Tags: []string{"x"}}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's customer: %v", err)
	}
	if _, err := h.SetCustomerTags(ctx, commands.SetCustomerTags{ShopID: "shop_1", CustomerID: "not-an-id", Tags: []string{"x"}}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("malformed id: %v", err)
	}
}
