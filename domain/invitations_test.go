package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestInviteUserRules(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	acc := &domain.Account{ID: "acc_1", Exists: true}
	owner := &domain.User{ID: "usr_1", AccountID: "acc_1", Role: domain.RoleOwner, Exists: true}
	hash := strings.Repeat("a", 64)
	for name, c := range map[string]struct {
		acc          *domain.Account
		inviter      *domain.User
		email, role  string
		hash, wanted string
	}{
		"ok":              {acc, owner, " New@Example.com", "admin", hash, ""},
		"no account":      {&domain.Account{}, owner, "n@example.com", "admin", hash, string(domain.CodeNotFound)},
		"an admin":        {acc, &domain.User{ID: "usr_2", AccountID: "acc_1", Role: domain.RoleAdmin, Exists: true}, "n@example.com", "admin", hash, string(domain.CodeForbidden)},
		"another account": {acc, &domain.User{ID: "usr_3", AccountID: "acc_2", Role: domain.RoleOwner, Exists: true}, "n@example.com", "admin", hash, string(domain.CodeForbidden)},
		"bad e-mail":      {acc, owner, "Ana <a@example.com>", "admin", hash, string(domain.CodeInvalid)},
		"bad role":        {acc, owner, "n@example.com", "root", hash, string(domain.CodeInvalid)},
		"no secret":       {acc, owner, "n@example.com", "admin", "", string(domain.CodeInvalid)},
	} {
		ev, err := domain.InviteUser(c.acc, c.inviter, "inv_1", c.email, c.role, c.hash, now)
		if string(domain.ErrorCode(err)) != c.wanted {
			t.Fatalf("%s: %v, want %q", name, err, c.wanted)
		}
		if err == nil && (ev.Email != "new@example.com" || ev.ExpiresAt != now.Add(domain.InvitationTTL) || ev.InvitedBy != "usr_1") {
			t.Fatalf("%s: %+v", name, ev)
		}
	}
	ev, _ := domain.InviteUser(acc, owner, "inv_1", "n@example.com", "read_only", hash, now)
	var inv domain.Invitation
	inv.Apply(ev)
	if _, err := inv.Accept("usr_9", now.Add(domain.InvitationTTL)); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("accept at expiry: %v", err)
	}
	acc2, err := inv.Accept("usr_9", now.Add(time.Hour))
	if err != nil || acc2.UserID != "usr_9" {
		t.Fatalf("accept: %v %v", acc2, err)
	}
	inv.Apply(acc2)
	if _, err := inv.Accept("usr_10", now.Add(2*time.Hour)); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("accept twice: %v", err)
	}
	if _, err := (&domain.Invitation{}).Accept("usr_1", now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("accept nothing: %v", err)
	}
}
