package adminui_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/adminui/sessionstest"
)

func TestSessionsExpire(t *testing.T) {
	sessionstest.Run(t, func(t *testing.T, now func() time.Time) adminui.SessionStore {
		s, err := adminui.OpenSessions(filepath.Join(t.TempDir(), "sessions.db"), now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
