package wireharness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/postgres"
	"github.com/agentmem/memory-adapter-operator/adapters/redis"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/adapters/sqlite"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/wireharness"
)

// Live servers for the whole package: MAO_TEST_POSTGRES_URL / MAO_TEST_REDIS_ADDR when set,
// otherwise throwaway servers started with the hack scripts. Tests never skip: without a
// server the package fails.
var (
	postgresURL string
	redisAddr   string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	postgresURL = os.Getenv("MAO_TEST_POSTGRES_URL")
	redisAddr = os.Getenv("MAO_TEST_REDIS_ADDR")
	if postgresURL == "" {
		dir, err := os.MkdirTemp("", "mao-wire-pg-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		postgresURL, err = startScript("postgres-server.sh", dir, "MAO_TEST_POSTGRES_URL=")
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: cannot start PostgreSQL (set MAO_TEST_POSTGRES_URL):", err)
			return 1
		}
		defer stopScript("postgres-server.sh", dir)
	}
	if redisAddr == "" {
		dir, err := os.MkdirTemp("", "mao-wire-redis-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		redisAddr, err = startScript("redis-server.sh", dir, "MAO_TEST_REDIS_ADDR=")
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: cannot start Redis (set MAO_TEST_REDIS_ADDR):", err)
			return 1
		}
		defer stopScript("redis-server.sh", dir)
	}
	return m.Run()
}

func hackScript(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", name)
}

func startScript(name, dir, prefix string) (string, error) {
	cmd := exec.Command("bash", hackScript(name), "start", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s start: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s printed no %s line", name, prefix)
}

func stopScript(name, dir string) {
	if out, err := exec.Command("bash", hackScript(name), "stop", dir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s stop: %v: %s\n", name, err, out)
	}
}

func liveCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// backendHarness builds each live backend's own harness.
var backendHarness = map[string]func(ctx context.Context, t testing.TB) (conformance.Harness, error){
	"sqlite": func(ctx context.Context, t testing.TB) (conformance.Harness, error) {
		return sqlite.NewHarness(ctx, sqlite.HarnessOptions{Dir: t.TempDir()})
	},
	"postgres": func(ctx context.Context, _ testing.TB) (conformance.Harness, error) {
		return postgres.NewHarness(ctx, postgres.HarnessOptions{URL: postgresURL})
	},
	"redis": func(ctx context.Context, _ testing.TB) (conformance.Harness, error) {
		return redis.NewHarness(ctx, redis.HarnessOptions{Addr: redisAddr})
	},
}

// TestLiveBackendsThroughTheWire is the acceptance test of the wire: the whole matrix passes
// through remote → server → each real backend, with every exchange validated against the
// OpenAPI document, and the wire report agrees case by case with a direct run on the same
// backend (the wire loses nothing the backend keeps). It runs once cutting HTTP and once
// cutting the backend's own transport behind the server.
func TestLiveBackendsThroughTheWire(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			ctx := liveCtx(t)
			direct, err := backendHarness[name](ctx, t)
			if err != nil {
				t.Fatalf("direct harness: %v", err)
			}
			dr := conformance.Execute(ctx, direct, conformance.Options{})
			if err := direct.Close(ctx); err != nil {
				t.Errorf("close direct harness: %v", err)
			}
			for _, cutBackend := range []bool{false, true} {
				t.Run(fmt.Sprintf("cutBackend=%t", cutBackend), func(t *testing.T) {
					inner, err := backendHarness[name](ctx, t)
					if err != nil {
						t.Fatalf("harness: %v", err)
					}
					h := wireharness.New(inner, wireharness.Options{Token: "live", CutBackend: cutBackend, WrapTransport: validated(t)})
					t.Cleanup(func() {
						if err := h.Close(context.Background()); err != nil {
							t.Errorf("close: %v", err)
						}
					})
					wr := conformance.Run(t, h)
					if wr.ManifestHash != dr.ManifestHash {
						t.Errorf("wire manifest %s, direct %s", wr.ManifestHash, dr.ManifestHash)
					}
					for _, dc := range dr.Cases {
						if dc.Outcome != conformance.Passed {
							continue
						}
						if wc, _ := wr.Case(dc.ID); wc.Outcome != conformance.Passed {
							t.Errorf("case %s passes directly but is %s through the wire: %s", dc.ID, wc.Outcome, wc.Message)
						}
					}
				})
			}
		})
	}
}

// TestHostileDataThroughTheWire replays the hostile-data reports through remote → server →
// each real backend: every fixture is stored or refused as it is directly, and no stored one
// breaks any kind of search in the scope.
func TestHostileDataThroughTheWire(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			ctx := liveCtx(t)
			inner, err := backendHarness[name](ctx, t)
			if err != nil {
				t.Fatalf("harness: %v", err)
			}
			// Not through the validating transport: kin-openapi decodes numbers as float64 and
			// refuses 1e131071, a JSON number the contract allows (the matrix run validates).
			h := wireharness.New(inner, wireharness.Options{Token: "live"})
			t.Cleanup(func() {
				if err := h.Close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			var o storetest.HostileOptions
			if name == "postgres" {
				o.Rejects = []string{storetest.HostileNUL}
			}
			storetest.HostileData(t, func(*testing.T) storetest.Harness { return h }, o)
		})
	}
}

// benchPair serves one backend store over HTTP and returns its harness and both ways of
// calling it.
func benchPair(b *testing.B, name string) (inner conformance.Harness, direct memory.ExternalStore, wire *remote.Store) {
	b.Helper()
	ctx := liveCtx(b)
	inner, err := backendHarness[name](ctx, b)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = inner.Close(context.Background()) })
	// Straight to the server where the harness can: its fault-injection proxy would add a
	// hop to both arms and dilute the wire's share.
	if d, ok := inner.(interface {
		MakeDirectStore(context.Context) (memory.ExternalStore, error)
	}); ok {
		direct, err = d.MakeDirectStore(ctx)
	} else {
		direct, err = inner.MakeStore(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: direct, Token: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	srv.Refresh(ctx, true)
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	tr := hs.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	wire, err = remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "bench", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	return inner, direct, wire
}

func benchItem(i int) memory.Item {
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"text":"benchmark item %d","n":%d}`, i, i)), "bench", fmt.Sprintf("t%d", i%10))
	it.Metadata["source"] = json.RawMessage(`"bench"`)
	it.Metadata["branch_id"] = json.RawMessage(fmt.Sprintf(`"b%d"`, i%4))
	return it
}

// BenchmarkWireOverhead compares store, retrieve and search through HTTP (remote → server →
// backend, loopback) with the same store called in-process, in the same run. The reported
// metric wire/direct is the ratio of ns/op; docs/server.md records the figures.
func BenchmarkWireOverhead(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			_, direct, wire := benchPair(b, name)
			ctx := context.Background()
			seed := seedBench(b, direct)
			q := memory.Query{Tags: []string{"t3"}, Filters: map[string]json.RawMessage{"source": []byte(`"bench"`)}, Limit: 10}
			ops := map[string]func(s memory.Store, i int) error{
				"store": func(s memory.Store, i int) error {
					_, err := s.Store(ctx, benchItem(1000+i))
					return err
				},
				"retrieve": func(s memory.Store, i int) error {
					it, err := s.Retrieve(ctx, seed[i%len(seed)].ID)
					if err == nil && it == nil {
						err = fmt.Errorf("seed item %d missing", i%len(seed))
					}
					return err
				},
				"search": func(s memory.Store, _ int) error {
					hits, err := s.Search(ctx, q)
					if err == nil && len(hits) == 0 {
						err = fmt.Errorf("search found nothing")
					}
					return err
				},
			}
			for _, op := range []string{"store", "retrieve", "search"} {
				b.Run(op, func(b *testing.B) {
					// Direct and wire calls alternate, so that load from other processes on a
					// shared machine and the backend's growth weigh on both sides alike.
					var d, w time.Duration
					b.ResetTimer()
					for i := range b.N {
						start := time.Now()
						if err := ops[op](direct, 2*i); err != nil {
							b.Fatal(err)
						}
						mid := time.Now()
						if err := ops[op](wire, 2*i+1); err != nil {
							b.Fatal(err)
						}
						d += mid.Sub(start)
						w += time.Since(mid)
					}
					dn, wn := float64(d.Nanoseconds())/float64(b.N), float64(w.Nanoseconds())/float64(b.N)
					b.ReportMetric(dn, "direct-ns/op")
					b.ReportMetric(wn, "wire-ns/op")
					b.ReportMetric(wn/dn, "wire/direct")
					b.ReportMetric(1e9/wn, "wire-ops/s")
				})
			}
		})
	}
}
