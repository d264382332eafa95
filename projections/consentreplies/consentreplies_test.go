package consentreplies_test

import (
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections/consentreplies"
)

// The reactor asks the runtime for inbound WhatsApp messages only, so
// customer webhooks cost it no decoding.
func TestReactorDecodesInboundMessagesOnly(t *testing.T) {
	p := consentreplies.Reactor(envelope.New(domain.Events(), nil), nil)
	if p.Name != consentreplies.Name || !slices.Equal(p.Types, []string{"WhatsAppMessageReceived"}) {
		t.Fatalf("%s handles %v", p.Name, p.Types)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}
