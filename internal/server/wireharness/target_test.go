package wireharness_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// validatingClient checks every exchange of a wire run against the OpenAPI document, both
// listeners included. The authentication case's requests carry no or a wrong token (and a
// deliberately invalid body), so only the answers to those are validated.
func validatingClient(t *testing.T, tokens ...string) *http.Client {
	v := openapitest.NewTransport(t, http.DefaultTransport)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !slices.Contains(tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
			r = r.WithContext(openapitest.Hostile(r.Context()))
		}
		return v.RoundTrip(r)
	})}
}

// serveHarnessMode serves inner as `memory-adapter serve --harness` does: the data wire on
// one listener, the harness protocol on another, each with its own token.
func serveHarnessMode(t *testing.T, inner conformance.Harness) (dataURL, harnessURL string) {
	t.Helper()
	ctx := liveCtx(t)
	hs, err := server.NewHarnessStore(ctx, inner)
	if err != nil {
		t.Fatalf("harness store: %v", err)
	}
	t.Cleanup(func() {
		if err := hs.Close(context.Background()); err != nil {
			t.Errorf("close harness store: %v", err)
		}
	})
	cfg := server.Config{Store: hs, Token: []byte("data-token"), AdapterVersion: "test"}
	if hs.CanProbe() {
		cfg.Prober = hs
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(ctx, true)
	h, err := srv.HarnessHandler(server.HarnessConfig{Store: hs, Token: []byte("harness-token"), DuplicateIDBehaviour: conformance.DuplicateOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	data, harness := httptest.NewServer(srv.Handler()), httptest.NewServer(h)
	t.Cleanup(data.Close)
	t.Cleanup(harness.Close)
	return data.URL, harness.URL
}

// TestTargetAgainstHarnessMode is the acceptance test of conformance --target: the whole
// matrix and the wire-rule cases pass through a raw client against the server in harness
// mode over every backend, every exchange validated against the OpenAPI document. Every
// backend but inmemory has every capability (the full claim); inmemory has no other native
// record kind to plant.
func TestTargetAgainstHarnessMode(t *testing.T) {
	harnesses := map[string]func(ctx context.Context, t testing.TB) (conformance.Harness, error){
		"inmemory": func(context.Context, testing.TB) (conformance.Harness, error) { return newMemHarness(), nil },
	}
	for k, v := range backendHarness {
		harnesses[k] = v
	}
	for _, name := range []string{"inmemory", "sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			ctx := liveCtx(t)
			inner, err := harnesses[name](ctx, t)
			if err != nil {
				t.Fatalf("harness: %v", err)
			}
			dataURL, harnessURL := serveHarnessMode(t, inner)
			h, err := wire.New(ctx, wire.Options{
				TargetURL: dataURL, Token: "data-token", HarnessURL: harnessURL, HarnessToken: "harness-token",
				HTTPClient: validatingClient(t, "data-token", "harness-token"),
			})
			if err != nil {
				t.Fatal(err)
			}
			r := conformance.Execute(ctx, h, conformance.Options{})
			if r.Result != conformance.Passed {
				t.Fatalf("%s\n%s", r.Summary(), r.Table())
			}
			want := []string(nil)
			if name == "inmemory" {
				want = []string{string(conformance.CapWrongKindRecord)}
			}
			if !slices.Equal(r.MissingCapabilities, want) {
				t.Errorf("missing capabilities %v, want %v\n%s", r.MissingCapabilities, want, r.Table())
			}
			if r.Target != dataURL || r.AdapterVersion != "test" || len(r.Cases) != len(conformance.CaseIDs())+len(conformance.WireCases()) {
				t.Errorf("report target %q adapter version %q with %d cases", r.Target, r.AdapterVersion, len(r.Cases))
			}
			t.Logf("%s: %s, %d cases in %dms", name, r.Summary(), len(r.Cases), r.DurationMillis)
		})
	}
}

// TestTargetWithoutHarnessMode: a server that offers no harness protocol is judged only on
// what needs no disposable scope; every other case is NotApplicable naming the missing
// capability, and the run never claims the full ADR.
func TestTargetWithoutHarnessMode(t *testing.T) {
	ctx := liveCtx(t)
	inner := newMemHarness()
	store, err := inner.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: store, Token: []byte("data-token")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(ctx, true)
	data := httptest.NewServer(srv.Handler())
	t.Cleanup(data.Close)
	h, err := wire.New(ctx, wire.Options{TargetURL: data.URL, Token: "data-token", HTTPClient: validatingClient(t, "data-token")})
	if err != nil {
		t.Fatal(err)
	}
	r := conformance.Execute(ctx, h, conformance.Options{})
	if r.FullClaim() || r.Claim != conformance.ClaimPartial || !strings.Contains(r.Summary(), "missing harness capabilities") {
		t.Errorf("a server without harness mode: %s", r.Summary())
	}
	for _, c := range r.Cases {
		switch c.ID {
		case conformance.CaseAuthentication, conformance.CaseManifestStable, conformance.CaseManifestAccuracy:
			if c.Outcome != conformance.Passed {
				t.Errorf("%s needs no harness but is %s: %s", c.ID, c.Outcome, c.Message)
			}
		default:
			if c.Outcome != conformance.NotApplicable || !strings.Contains(c.Message, "missing harness capability reset") {
				t.Errorf("%s: %s %q, want NotApplicable naming reset", c.ID, c.Outcome, c.Message)
			}
		}
	}
	t.Logf("%s", r.Summary())
}
