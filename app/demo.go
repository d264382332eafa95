package app

import (
	"context"
	"fmt"
	"io"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// DemoUserEmail is the e-mail of the demo's admin-interface user (the
// demo account's owner; its random password is printed once).
const DemoUserEmail = "owner@demo-shop.example.com"

// CreateDemo creates a demo account, shop, token and admin user on an empty log and
// prints the token and a curl command once. On a log with events it
// creates nothing (the token was shown the first time and is not kept) and
// prints how to find the shop and make a new token instead.
func CreateDemo(ctx context.Context, a *App, addr string, out io.Writer) error {
	head, err := a.Log.HeadPosition(ctx)
	if err != nil {
		return err
	}
	if head > 0 {
		dir := a.Config.DataDir
		_, err = fmt.Fprintf(out, `Data directory %s already holds data; its demo token was shown once, when it was created.
To make a new token:
  bin/cgp shops list --data-dir %s
  bin/cgp tokens create --data-dir %s --scopes '*' --shop SHOP_ID

`, dir, dir, dir)
		return err
	}
	meta := commands.Meta{Actor: "system:demo", Source: "system"}
	acc, err := a.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "Demo Agency", Plan: string(domain.PlanEnterprise)}, meta)
	if err != nil {
		return fmt.Errorf("demo account: %w", err)
	}
	secret := domain.RandomBase62(32)
	shop, err := a.Commands.CreateShop(ctx, commands.CreateShop{
		AccountID: acc.ID, Domain: "demo-shop.example.com", Plan: string(domain.PlanAgency), WebhookSecret: secret,
	}, meta)
	if err != nil {
		return fmt.Errorf("demo shop: %w", err)
	}
	tok, err := a.Commands.IssueToken(ctx, commands.IssueToken{ShopID: shop.ID, Name: "demo", Scopes: []string{"*"}, Environment: domain.EnvTest}, meta)
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	password := domain.RandomBase62(20)
	user, err := CreateUser(ctx, a.Core, acc.ID, DemoUserEmail, string(domain.RoleOwner), password, meta)
	if err != nil {
		return fmt.Errorf("demo user: %w", err)
	}
	_, err = fmt.Fprintf(out, `Demo data created (shown once, not stored in clear):
  account:        %s
  shop:           %s (domain demo-shop.example.com)
  webhook secret: %s
  admin token:    %s
  admin sign-in:  http://%s/admin/login as %s, password %s

For the README's quick start, in another shell:
  export TOKEN=%s SECRET=%s

Try:
  curl -s -H 'Authorization: Bearer %s' -H 'X-Wait-For-Position: %d' http://%s/api/v1/customers

`, acc.ID, shop.ID, secret, tok.Token, addr, user.Email, password, tok.Token, secret, tok.Token, tok.Position, addr)
	return err
}
