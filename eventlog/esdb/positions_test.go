package esdb_test

import (
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/eventlogtest"
)

// TestPositionReaderFake runs the PositionReader contract against the
// in-process fake node.
func TestPositionReaderFake(t *testing.T) {
	srv := startFake(t)
	eventlogtest.RunPositionReader(t, func(t *testing.T) eventlog.Log { return openAt(t, srv.URL(), namespace()) })
}

// TestPositionReader runs it against a real node (CGP_ESDB_URL).
func TestPositionReader(t *testing.T) {
	url := serverURL(t)
	eventlogtest.RunPositionReader(t, func(t *testing.T) eventlog.Log { return openAt(t, url, namespace()) })
}
