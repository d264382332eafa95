package projections

import (
	"reflect"

	"github.com/cgp-platform/cgp/domain"
)

// dispatch is a table of functions F by event type, with the types in
// the order given: Cases and TxCases are built on it.
type dispatch[F any] struct {
	types []string
	by    map[string]F
}

// add adds the function of typ; two of one type are a programming error.
func (d *dispatch[F]) add(typ string, f F) {
	if d.by == nil {
		d.by = make(map[string]F)
	}
	if _, dup := d.by[typ]; dup {
		panic("projections: two cases of " + typ)
	}
	d.types = append(d.types, typ)
	d.by[typ] = f
}

// Types are the event types of the cases, in the order given.
func (d dispatch[F]) Types() []string { return append([]string(nil), d.types...) }

// eventType is the type name of the domain event E (a pointer, as the
// codec decodes it).
func eventType[E domain.Event]() string {
	return reflect.New(reflect.TypeFor[E]().Elem()).Interface().(domain.Event).EventType()
}

// Cases is a fold's dispatch by event type, written once: each case is
// the function that folds one event type into a state S, and the types the
// projector folds (Projector.Types) are read from the cases, so that they
// are not listed a second time beside a type switch.
type Cases[S any] struct {
	dispatch[func(S, *DecodedEvent)]
}

// Case folds events of one type into a state S.
type Case[S any] struct {
	typ   string
	apply func(S, *DecodedEvent)
}

// On is the case of the event type E (a pointer to a domain event, as the
// codec decodes it).
func On[S any, E domain.Event](fold func(s S, ev E, e *DecodedEvent)) Case[S] {
	return Case[S]{typ: eventType[E](), apply: func(s S, e *DecodedEvent) { fold(s, e.Decoded.Event.(E), e) }}
}

// NewCases returns the dispatch of cases (one per event type).
func NewCases[S any](cases ...Case[S]) Cases[S] {
	var c Cases[S]
	for _, k := range cases {
		c.add(k.typ, k.apply)
	}
	return c
}

// Apply folds e into s with the case of its type and reports whether
// there was one.
func (c Cases[S]) Apply(s S, e *DecodedEvent) bool {
	fold, ok := c.by[e.Type]
	if ok {
		fold(s, e)
	}
	return ok
}
