package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves handler in plain HTTP on addr until the returned stop is called, and
// returns the address it listens on. The
// metrics port is separate from the data port so that a NetworkPolicy can admit a monitoring
// namespace to it alone; it is plain HTTP because it carries counts and timings, never an
// item or a token, and a scraper then needs no copy of the adapter's CA. It listens before it
// returns, so a taken port stops the server at start-up with the reason.
func serveMetrics(log *slog.Logger, addr string, handler http.Handler) (bound net.Addr, stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listen: %w", err)
	}
	// Bounded like the data port: a scraper that stalls holds one connection, not a goroutine
	// per byte it never sends.
	hs := &http.Server{
		Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("Metrics listener stopped", "error", err)
		}
	}()
	log.Info("Serving metrics", "address", l.Addr().String())
	return l.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	}, nil
}
