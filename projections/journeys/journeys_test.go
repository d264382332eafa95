package journeys_test

import (
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/projections/journeys"
)

// TestTriggersAreCommerceTopics: every journey trigger is one of the
// platform's topics.
func TestTriggersAreCommerceTopics(t *testing.T) {
	for _, tr := range domain.JourneyTriggers() {
		if !slices.Contains(shopify.Topics(), tr) {
			t.Errorf("trigger %q is not a commerce topic", tr)
		}
	}
}

// TestTheReadModelFoldsOnlyJourneyEvents: the journeys projector is a
// read model; the triggers are the enrollment reactor's.
func TestTheReadModelFoldsOnlyJourneyEvents(t *testing.T) {
	for _, typ := range journeys.Projector(nil).Types {
		switch typ {
		case "ShopErased", "JourneyCreated", "JourneyEnrollmentStarted", "JourneyEnrollmentExited", "JourneyEnrollmentCompleted", "JourneyPaused", "JourneyResumed",
			"JourneyUpdated":
		default:
			t.Errorf("the journeys read model folds %s", typ)
		}
	}
}
