package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestCreateUserValidates(t *testing.T) {
	acc := &domain.Account{ID: "acc_1", Exists: true}
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	ev, err := domain.CreateUser(acc, "usr_1", "  Ana@Example.COM ", "owner", "$argon2id$…", now)
	if err != nil || ev.Email != "ana@example.com" || ev.Role != domain.RoleOwner || ev.AccountID != "acc_1" {
		t.Fatalf("CreateUser = %+v, %v", ev, err)
	}
	var p domain.Personal = ev
	if p.Subject() != "usr_1" || len(p.PersonalFields()) != 2 {
		t.Fatalf("UserCreated seals %v under %q", p.PersonalFields(), p.Subject())
	}
	for _, c := range []struct{ email, role, hash, field string }{
		{"not an address", "owner", "h", "email"},
		{"Ana <ana@example.com>", "owner", "h", "email"},
		{"", "owner", "h", "email"},
		{"ana@example.com", "root", "h", "role"},
		{"ana@example.com", "admin", "", "password"},
	} {
		_, err := domain.CreateUser(acc, "usr_1", c.email, c.role, c.hash, now)
		if domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("CreateUser(%q, %q): %v, want invalid %s", c.email, c.role, err, c.field)
		}
	}
	if _, err := domain.CreateUser(&domain.Account{}, "usr_1", "ana@example.com", "owner", "h", now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("an unknown account: %v", err)
	}
	if domain.UserEmailStream("Ana@Example.com ") != domain.UserEmailStream("ana@example.com") {
		t.Error("the e-mail claim is not case-insensitive")
	}
}
