package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

type serveFlags struct {
	backend          backendConfig
	listen           string
	metricsListen    string
	tokenFile        string
	insecureNoToken  bool
	maxBodyBytes     int64
	operationTimeout time.Duration
	probePeriod      time.Duration
	maxIndexLag      int64
	openTimeout      time.Duration
	shutdownTimeout  time.Duration
	drainDelay       time.Duration
	logLevel         string
	tlsCertFile      string
	tlsKeyFile       string
	doorbellURL      string
	harness          harnessFlags
	governanceFlags
}

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one adapter instance over HTTP (contract.md §4)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.backend.resolve(cmd.Flags()); err != nil {
				return err
			}
			if err := f.harness.resolve(cmd.Flags(), f.tokenFile, f.backend.chosen().ProductionFlags); err != nil {
				return err
			}
			return runServe(cmd.Context(), &f)
		},
	}
	fs := cmd.Flags()
	f.backend.addFlags(fs, "the namespace this instance's items live in, fixed for its life (default \"default\")")
	fs.StringVar(&f.listen, "listen", ":8080", "address to listen on")
	fs.StringVar(&f.metricsListen, "metrics-listen", "",
		"also serve GET /metrics alone, in plain HTTP, on this address (the operator sets :9090, the port a monitoring namespace may reach); empty: /metrics only on --listen")
	fs.StringVar(&f.tokenFile, "token-file", "",
		"file holding the bearer tokens /v1 routes accept, one a line (at most 256; a token or sha256:HEX of it, then optionally read-only and sub-scope=NAME), re-read when it changes so a rotation needs no restart (required unless --insecure-no-token)")
	fs.BoolVar(&f.insecureNoToken, "insecure-no-token", false, "serve /v1 without authentication, for local development only")
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "request body limit; larger bodies get 413")
	fs.DurationVar(&f.operationTimeout, "operation-timeout", server.DefaultOperationTimeout, "bound on one backend call")
	fs.DurationVar(&f.probePeriod, "probe-period", 10*time.Second, "how often the backend is probed for evidence")
	fs.Int64Var(&f.maxIndexLag, "max-index-lag", 0, "unsearchable writes an immediate manifest tolerates before it is invalidated")
	fs.DurationVar(&f.openTimeout, "open-timeout", 30*time.Second, "bound on connecting to the backend at start")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", server.DefaultTimeouts.Shutdown, "how long in-flight requests may take to finish once the listener closes")
	fs.DurationVar(&f.drainDelay, "drain-delay", 0,
		"on SIGTERM, keep accepting and answering (each answer with Connection: close) this long before closing the listener, while load balancers stop sending to this instance (the operator sets 5s)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	addGovernorFlags(fs, &f.governanceFlags)
	// The defaults come from the variables the operator sets for an External server, so
	// this image run as one serves TLS exactly when the adapter's spec asks for it.
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", os.Getenv("MEMORY_ADAPTER_TLS_CERT_FILE"),
		"serve /v1 over HTTPS with this PEM certificate (with --tls-key-file); a changed file is picked up without a restart (default $MEMORY_ADAPTER_TLS_CERT_FILE)")
	fs.StringVar(&f.tlsKeyFile, "tls-key-file", os.Getenv("MEMORY_ADAPTER_TLS_KEY_FILE"),
		"the PEM private key of --tls-cert-file (default $MEMORY_ADAPTER_TLS_KEY_FILE)")
	fs.StringVar(&f.doorbellURL, "doorbell-url", os.Getenv("MEMORY_ADAPTER_DOORBELL_URL"),
		"POST here whenever the evidence's verdict changes, so the operator reads it at once instead of at its next period (default $MEMORY_ADAPTER_DOORBELL_URL, which the operator sets); empty: no doorbell")
	f.harness.addFlags(fs)
	return cmd
}

// newLogger writes JSON lines in the manager's shape (controller-runtime's zap logger, set up
// in cmd/main.go), so one log pipeline reads both binaries: "level" in lower case, "ts" in
// seconds since the epoch, a constant capitalized "msg" without a trailing period, lowerCamel
// keys, and the error under "error".
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError("--log-level: %v", err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l, ReplaceAttr: managerShape})), nil
}

// zapTimeKey is the timestamp key of controller-runtime's production zap encoder.
const zapTimeKey = "ts"

// managerShape renames and reformats slog's built-in attributes to zap's production form.
func managerShape(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		a = slog.Float64(zapTimeKey, float64(a.Value.Time().UnixNano())/1e9)
	case slog.LevelKey:
		a.Value = slog.StringValue(strings.ToLower(a.Value.String()))
	}
	return a
}

func runServe(parent context.Context, f *serveFlags) error {
	log, err := newLogger(f.logLevel)
	if err != nil {
		return err
	}
	if f.drainDelay < 0 || f.shutdownTimeout < 0 {
		return usageError("--drain-delay and --shutdown-timeout must not be negative")
	}
	if err := f.checkGovernor(); err != nil {
		return err
	}
	// Refusing to start without a token is the safe default: an open /v1 lets anyone who can
	// reach the listener read and write every item of the scope.
	var tokens server.TokenSource
	switch {
	case f.tokenFile != "" && f.insecureNoToken:
		return usageError("--token-file and --insecure-no-token exclude each other")
	case f.tokenFile != "":
		tf, err := server.LoadTokenFile(f.tokenFile, log)
		if err != nil {
			return usageError("--token-file: %v", err)
		}
		tokens = tf
	case f.insecureNoToken:
		log.Warn("Serving without a bearer token", "reason", "--insecure-no-token: /v1 routes are open to anyone who can reach the listener; for local development only")
	default:
		return usageError("no --token-file: the server refuses to serve /v1 without authentication (pass --insecure-no-token for local development)")
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
	defer stop()

	octx, cancel := context.WithTimeout(ctx, f.openTimeout)
	var store memory.ExternalStore
	var hstore *server.HarnessStore
	if f.harness.enabled {
		// Harness mode never opens the configured scope: the backend's conformance harness
		// makes a fresh disposable one, dropped when the server stops.
		hstore, err = openHarnessStore(octx, &f.backend)
		store = hstore
	} else {
		store, err = f.backend.chosen().Open(octx, f.backend.config())
		err = asUsage(err)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("open %s backend: %w", f.backend.Backend, err)
	}
	defer func() {
		var err error
		if hstore != nil {
			err = hstore.Close(context.WithoutCancel(ctx))
		} else {
			err = closeStore(store)
		}
		if err != nil {
			log.Error("Failed to close the backend", "error", err)
		}
	}()
	cfg := server.Config{
		Store: store, AdapterVersion: adapterVersion(), Tokens: tokens,
		MaxBodyBytes: f.maxBodyBytes, OperationTimeout: f.operationTimeout,
		MaxIndexLag: f.maxIndexLag, Logger: log,
		Scope: f.backend.Scope, Retention: f.retention, SweepPeriod: f.sweepPeriod, Quota: f.quota,
		AccessControl: f.accessControl,
	}
	var grants *server.HarnessGrants
	if hstore != nil && f.wireGovernance() != nil {
		// A governed harness: the matrix's disposable scope stays ungoverned (its writes
		// would breach a small quota), the profiles get sub-scopes with tokens the harness
		// issues.
		if tokens == nil {
			return usageError("--harness with governance flags needs --token-file: the governance profiles' tokens carry rights")
		}
		if hstore.Scope() == "" {
			return usageError("--harness with governance flags: the %s harness does not name its disposable scope, so its sub-scopes could outlive it", f.backend.Backend)
		}
		grants = server.NewHarnessGrants(tokens)
		cfg.Tokens, cfg.GovernSubScopesOnly, cfg.Scope = grants, true, hstore.Scope()
	}
	if p, ok := store.(memory.Prober); ok && (hstore == nil || hstore.CanProbe()) {
		cfg.Prober = p
	}
	if f.doorbellURL != "" {
		if cfg.Doorbell, err = server.NewHTTPDoorbell(f.doorbellURL); err != nil {
			return usageError("--doorbell-url: %v", err)
		}
	}
	if cfg.Tracing, err = startTracing(ctx, log, &f.backend); err != nil {
		return err
	}
	defer stopTracing(cfg.Tracing.Provider, log)
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	// The certificate loads before the listener opens: a server that cannot serve TLS exits
	// with the reason rather than listening in plain text.
	var certs *server.CertificateFiles
	if f.tlsCertFile != "" || f.tlsKeyFile != "" {
		if certs, err = server.LoadCertificateFiles(f.tlsCertFile, f.tlsKeyFile, log); err != nil {
			return usageError("--tls-cert-file/--tls-key-file: %v", err)
		}
	}
	if f.metricsListen != "" {
		_, stop, err := serveMetrics(log, f.metricsListen, srv.MetricsHandler())
		if err != nil {
			return err
		}
		defer stop()
	}
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if certs != nil {
		l = tls.NewListener(l, certs.TLSConfig())
	}
	t := server.DefaultTimeouts
	t.Write = f.operationTimeout + 5*time.Second
	t.Shutdown = f.shutdownTimeout
	t.Drain = f.drainDelay
	m := srv.Manifest()
	log.Info("Serving", "address", l.Addr().String(), "backend", f.backend.Backend, "adapter", m.Adapter,
		"manifestHash", m.Hash(), "adapterVersion", adapterVersion(), "auth", tokens != nil, "tls", certs != nil)
	if hstore != nil {
		return serveWithHarness(ctx, log, srv, hstore, grants, l, t, f)
	}
	if err := srv.Serve(ctx, l, t, f.probePeriod); err != nil {
		return err
	}
	log.Info("Stopped")
	return nil
}
