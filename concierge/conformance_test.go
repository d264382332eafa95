package concierge_test

import (
	"testing"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/conciergetest"
)

func TestEmbeddedConformance(t *testing.T) {
	conciergetest.Run(t, func(*testing.T) concierge.Answerer { return concierge.NewEmbedded() })
}
