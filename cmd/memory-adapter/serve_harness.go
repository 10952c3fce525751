package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// harnessFlags are serve's harness-mode flags (the HTTP harness protocol, /harness/v1).
type harnessFlags struct {
	enabled   bool
	listen    string
	tokenFile string
	token     []byte
}

func (h *harnessFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&h.enabled, "harness", false, "harness mode: serve a fresh disposable scope (never --scope or --sqlite-path) and the harness protocol on --harness-listen, for conformance --target; never on a production instance")
	fs.StringVar(&h.listen, "harness-listen", "", "harness mode: address of the separate harness listener (/harness/v1)")
	fs.StringVar(&h.tokenFile, "harness-token-file", "", "harness mode: file holding the harness listener's bearer token (required; must differ from every token in --token-file)")
}

// resolve checks the harness flags. Harness mode refuses an explicit --scope and the
// backend's flags that point at production data (its ProductionFlags, such as
// --sqlite-path): its reset empties the scope, so the scope is always the disposable one the
// backend's conformance harness creates (a random "conformance-…" scope, a throwaway
// PostgreSQL schema, a temporary SQLite file) and drops at exit.
func (h *harnessFlags) resolve(fs *pflag.FlagSet, dataTokenFile string, production []string) error {
	if !h.enabled {
		if h.listen != "" || h.tokenFile != "" {
			return usageError("--harness-listen and --harness-token-file need --harness")
		}
		return nil
	}
	switch {
	case fs.Changed("scope"):
		return usageError("--harness serves a fresh disposable scope made by the backend's conformance harness; --scope is refused so that a harness reset can never empty a real scope")
	case slices.ContainsFunc(production, fs.Changed):
		return usageError("--harness serves a fresh disposable scope made by the backend's conformance harness; %s point at production data and are refused so that a harness reset can never empty a real scope", flagList(production))
	case h.listen == "":
		return usageError("--harness needs --harness-listen: the harness protocol is served on its own listener")
	case h.tokenFile == "":
		return usageError("--harness needs --harness-token-file: the harness protocol is never served without its own token")
	}
	s, err := readSecretFile(h.tokenFile)
	if err != nil {
		return usageError("--harness-token-file: %v", err)
	}
	// A data token file that does not read is refused by serve itself, with its own message.
	if dataTokenFile != "" {
		data, _ := server.ReadTokenFile(dataTokenFile)
		if slices.ContainsFunc(data, func(g server.Grant) bool { return g.Digest == sha256.Sum256([]byte(s)) }) {
			return usageError("--harness-token-file must hold another token than --token-file: a data client must not be able to reset the scope")
		}
	}
	h.token = []byte(s)
	return nil
}

// openHarnessStore builds the backend's conformance harness over a disposable scope and the
// harness store the server publishes.
func openHarnessStore(ctx context.Context, c *backendConfig) (*server.HarnessStore, error) {
	inner, err := c.chosen().Harness(ctx, c.config())
	if err != nil {
		return nil, asUsage(err)
	}
	hs, err := server.NewHarnessStore(ctx, inner)
	if err != nil {
		_ = inner.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return hs, nil
}

// serveWithHarness serves the data listener and the harness listener until ctx ends.
func serveWithHarness(ctx context.Context, log *slog.Logger, srv *server.Server, hs *server.HarnessStore, grants *server.HarnessGrants, l net.Listener, t server.Timeouts, f *serveFlags) error {
	h, err := srv.HarnessHandler(server.HarnessConfig{
		Store: hs, Token: f.harness.token, DuplicateIDBehaviour: f.backend.chosen().DuplicateID,
		Scope: "disposable " + f.backend.Backend + " scope", Grants: grants,
	})
	if err != nil {
		_ = l.Close()
		return err
	}
	hl, err := net.Listen("tcp", f.harness.listen)
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("harness listen: %w", err)
	}
	log.Warn("Serving the conformance harness protocol", "address", hl.Addr().String(),
		"reason", "--harness: a disposable scope that any holder of the harness token can reset; never a production instance")
	// Harness mode probes only on demand (evidence, readiness, each reset): a periodic probe
	// during a planted outage would only race the cases.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ctx, l, t, 0) }()
	go func() { errc <- server.ServeHarness(ctx, hl, h, t) }()
	first := <-errc
	cancel()
	second := <-errc
	if err := errors.Join(first, second); err != nil {
		return err
	}
	log.Info("Stopped")
	return nil
}

// flagList names flags as a command line spells them.
func flagList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "--" + n
	}
	return strings.Join(out, ", ")
}
