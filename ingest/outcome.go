package ingest

import (
	"errors"

	"github.com/cgp-platform/cgp/commands"
)

// Outcome gathers the results of the commands one delivery runs (the
// messages and statuses of a notification, each status of a callback):
// the furthest position, the first client error (a part that does not
// fit) and whether some part was not mapped. A mapper adds each command's
// result and answers Process with Result, so the parts that fit are
// recorded even when another does not.
type Outcome struct {
	res       commands.Result
	clientErr error
	unhandled bool
}

// Add takes one command's result. It returns err when the log could not
// take the write: the mapper stops there, and the sender retries.
func (o *Outcome) Add(res commands.Result, err error) error {
	switch {
	case err == nil:
		if res.Position > o.res.Position {
			o.res = res
		}
	case errors.Is(err, ErrUnhandled):
		o.unhandled = true
	case isClientError(err):
		if o.clientErr == nil {
			o.clientErr = err
		}
	default:
		return err
	}
	return nil
}

// Result is the delivery's answer to Process: the first client error
// records it as unprocessable and an unmapped part as unhandled (the
// mapped parts are in the log either way, and their repeat appends
// nothing); otherwise the furthest result.
func (o *Outcome) Result() (commands.Result, error) {
	switch {
	case o.clientErr != nil:
		return commands.Result{}, o.clientErr
	case o.unhandled:
		return commands.Result{}, ErrUnhandled
	}
	return o.res, nil
}
