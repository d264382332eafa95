package postgres_test

import (
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/eventlogtest"
	"github.com/cgp-platform/cgp/eventlog/postgres"
)

func TestContract(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T) eventlog.Log {
		return openLog(t, postgres.Config{})
	}, eventlogtest.GlobalEventIDs())
}

func TestPositionReader(t *testing.T) {
	eventlogtest.RunPositionReader(t, func(t *testing.T) eventlog.Log { return openLog(t, postgres.Config{}) })
}

func BenchmarkLog(b *testing.B) {
	eventlogtest.Bench(b, func(b *testing.B) eventlog.Log {
		return openLog(b, postgres.Config{})
	})
}
