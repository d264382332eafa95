// Package concierge is the AI concierge's answering library (issue 18,
// point 4): the port through which an inbound customer message gets an
// answer (Answerer), the question and answer it carries, the escalation
// rules that send a conversation to the human queue (Rules.Decide), and
// the embedded default answerer (Embedded), which answers from the shop's
// own data only: the customer's recent orders (status and tracking) and
// the policies the merchant entered (shipping, returns, contact).
//
// The provider adapter for an OpenAI-compatible chat-completions API is
// the subpackage concierge/openai; every answerer passes the conformance
// suite of concierge/conciergetest.
//
// What a Question may hold is deliberately small: the customer's first
// name only, the orders' non-personal fields (name, statuses, created
// time, tracking), the merchant's policies, the inbound text and the last
// few messages. Whoever builds a Question (the conversations module) reads
// it from the read models, so an erased customer's data is not there to
// send; nothing in this package reads a store, the log, the environment
// or the clock.
//
// It imports the standard library only.
package concierge
