package main

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// newLogger builds the one logger of the process: JSON lines, or
// zerolog's human-readable console format with --log-format console, or
// with auto (the default) when w is a terminal.
func newLogger(cfg *Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if consoleLogs(cfg.LogFormat, w) {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.DateTime, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// consoleLogs says whether logs to w use the console format.
func consoleLogs(format string, w io.Writer) bool {
	switch format {
	case "console":
		return true
	case "json":
		return false
	default:
		return isTerminal(w)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
