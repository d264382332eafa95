package sqlite_test

import (
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/eventlogtest"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

func TestPositionReader(t *testing.T) {
	eventlogtest.RunPositionReader(t, func(t *testing.T) eventlog.Log { return openLog(t, sqlite.Config{}) })
}
