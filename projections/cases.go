package projections

import (
	"reflect"

	"github.com/cgp-platform/cgp/domain"
)

// Cases is a fold's dispatch by event type, written once: each case is
// the function that folds one event type into a state S, and the types the
// projector folds (Projector.Types) are read from the cases, so that they
// are not listed a second time beside a type switch.
type Cases[S any] struct {
	types []string
	by    map[string]func(S, *DecodedEvent)
}

// Case folds events of one type into a state S.
type Case[S any] struct {
	typ   string
	apply func(S, *DecodedEvent)
}

// On is the case of the event type E (a pointer to a domain event, as the
// codec decodes it).
func On[S any, E domain.Event](fold func(s S, ev E, e *DecodedEvent)) Case[S] {
	typ := reflect.New(reflect.TypeFor[E]().Elem()).Interface().(domain.Event).EventType()
	return Case[S]{typ: typ, apply: func(s S, e *DecodedEvent) { fold(s, e.Decoded.Event.(E), e) }}
}

// NewCases returns the dispatch of cases (one per event type).
func NewCases[S any](cases ...Case[S]) Cases[S] {
	c := Cases[S]{by: make(map[string]func(S, *DecodedEvent), len(cases))}
	for _, k := range cases {
		if _, dup := c.by[k.typ]; dup {
			panic("projections: two cases of " + k.typ)
		}
		c.types = append(c.types, k.typ)
		c.by[k.typ] = k.apply
	}
	return c
}

// Types are the event types of the cases, in the order given.
func (c Cases[S]) Types() []string { return append([]string(nil), c.types...) }

// Apply folds e into s with the case of its type and reports whether
// there was one.
func (c Cases[S]) Apply(s S, e *DecodedEvent) bool {
	fold, ok := c.by[e.Type]
	if ok {
		fold(s, e)
	}
	return ok
}
