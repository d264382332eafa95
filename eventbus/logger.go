package eventbus

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/rs/zerolog"
)

// Logger adapts a zerolog.Logger to watermill.LoggerAdapter, for the
// router and middleware. Watermill's Info becomes zerolog Debug, since the
// router reports routine starts and stops at Info; Trace stays Trace.
// Watermill logs message UUIDs (event ids) and error texts, never payloads
// from a handler without a publisher.
type Logger struct {
	l zerolog.Logger
}

// NewLogger returns the adapter over l.
func NewLogger(l zerolog.Logger) Logger { return Logger{l: l} }

// Error logs msg with err at error level.
func (a Logger) Error(msg string, err error, fields watermill.LogFields) {
	a.l.Error().Err(err).Fields(map[string]any(fields)).Msg(msg)
}

// Info logs msg at debug level.
func (a Logger) Info(msg string, fields watermill.LogFields) {
	a.l.Debug().Fields(map[string]any(fields)).Msg(msg)
}

// Debug logs msg at debug level.
func (a Logger) Debug(msg string, fields watermill.LogFields) {
	a.l.Debug().Fields(map[string]any(fields)).Msg(msg)
}

// Trace logs msg at trace level.
func (a Logger) Trace(msg string, fields watermill.LogFields) {
	a.l.Trace().Fields(map[string]any(fields)).Msg(msg)
}

// With returns an adapter whose entries carry fields.
func (a Logger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return Logger{l: a.l.With().Fields(map[string]any(fields)).Logger()}
}

var _ watermill.LoggerAdapter = Logger{}
