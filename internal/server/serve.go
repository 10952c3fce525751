package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Timeouts are the http.Server limits Serve applies.
type Timeouts struct {
	// ReadHeader bounds reading request headers (slowloris).
	ReadHeader time.Duration
	// Read bounds reading a whole request.
	Read time.Duration
	// Write bounds writing a response, counted from the end of the request headers; it must
	// exceed the operation timeout.
	Write time.Duration
	// Idle bounds keep-alive connections between requests.
	Idle time.Duration
	// Drain is how long the server keeps accepting and answering after the context ends,
	// before it closes its listener: the time a load balancer (kube-proxy, on every node) takes
	// to stop sending new connections to an instance that is going away. Every answer in that
	// time carries Connection: close, so a client's pooled connection is not reused after it.
	// Zero (the default) closes the listener at once.
	Drain time.Duration
	// Shutdown bounds how long in-flight requests may take to finish after the listener closes.
	Shutdown time.Duration
}

// DefaultTimeouts are the documented defaults (docs/server.md).
var DefaultTimeouts = Timeouts{
	ReadHeader: 5 * time.Second,
	Read:       15 * time.Second,
	Write:      DefaultOperationTimeout + 5*time.Second,
	Idle:       60 * time.Second,
	Shutdown:   25 * time.Second,
}

// Serve probes the backend once, then serves on l until ctx ends, refreshing evidence every
// probePeriod. When ctx ends it marks itself not ready, keeps serving for t.Drain with
// Connection: close on every answer, then shuts down gracefully: the listener closes and
// in-flight requests finish (up to t.Shutdown).
func (s *Server) Serve(ctx context.Context, l net.Listener, t Timeouts, probePeriod time.Duration) error {
	s.Refresh(ctx, true)
	hs := &http.Server{
		Handler:           s.drainingHandler(),
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          nil,
	}
	mctx, stopMonitor := context.WithCancel(ctx)
	defer stopMonitor()
	if probePeriod > 0 {
		go s.Monitor(mctx, probePeriod)
	}
	if s.cfg.Doorbell != nil {
		go s.ringOnChange(mctx)
	}
	go s.runGovernors(mctx, s.cfg.SweepPeriod)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.BeginShutdown()
	if t.Drain > 0 {
		drain := time.NewTimer(t.Drain)
		select {
		case err := <-errc:
			drain.Stop()
			return fmt.Errorf("serve: %w", err)
		case <-drain.C:
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.Shutdown)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// drainingHandler is the server's handler, answering with Connection: close once shutdown has
// begun: a client whose pooled connection reached an instance that is leaving learns it from
// the answer and dials again (the Service sends it to another instance), instead of finding
// the connection closed under a request it has just written, which it could not safely
// resend.
func (s *Server) drainingHandler() http.Handler {
	h := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.shuttingDown.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
