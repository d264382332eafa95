package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/cgp-platform/cgp/ingest"
)

// bareHandler is the baseline receiver: it reads the body, verifies its
// HMAC with the secret (constant-time compare) and answers 200
// {"status":"accepted"}; nothing is stored.
func bareHandler(secret []byte) http.Handler {
	accepted := []byte(`{"status":"accepted"}` + "\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, ingest.DefaultMaxBody))
		if err != nil {
			http.Error(w, `{"error":{"code":"invalid_parameter"}}`, http.StatusBadRequest)
			return
		}
		if !ingest.VerifyCommerce(secret, body, r.Header.Get(ingest.HeaderHMAC)) {
			http.Error(w, `{"error":{"code":"invalid_signature"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(accepted)
	})
}

// bareServer is the baseline receiver on a free loopback port of this
// process.
type bareServer struct {
	srv  *http.Server
	url  string
	done chan error
}

func startBare(secret string) (*bareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bare server: %w", err)
	}
	b := &bareServer{
		srv:  &http.Server{Handler: bareHandler([]byte(secret)), ReadHeaderTimeout: 10 * time.Second},
		url:  "http://" + ln.Addr().String() + "/webhooks/events",
		done: make(chan error, 1),
	}
	go func() { b.done <- b.srv.Serve(ln) }()
	return b, nil
}

func (b *bareServer) close() error {
	if err := b.srv.Close(); err != nil {
		return err
	}
	if err := <-b.done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
