package redis

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/tcpproxy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// A Redis that keeps its connections and stops answering, behind the server as the operator
// deploys it: the retrieve is retried by the adapter (three attempts, each ending at the
// request timeout), and the adapter's typed error, not the server's own deadline, answers the
// client, because the server's bound is composed from the attempts (docs/operator.md,
// "Timeouts: the lifecycle reaches the backend").
func TestStalledRedisRetriesAndTheTypedErrorWins(t *testing.T) {
	ctx := testCtx(t)
	h := newHarness(t)
	proxy, err := tcpproxy.New(redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const rt = 300 * time.Millisecond
	s, err := Open(ctx, Options{Addr: proxy.Addr(), Scope: h.Scope(), RequestTimeout: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	item := memory.NewItem(json.RawMessage(`"kept"`), "slow")
	if _, err := s.Store(ctx, item); err != nil {
		t.Fatal(err)
	}
	// The operator's composition for Redis's read policy: 3 attempts x the request timeout,
	// the backoffs between them (at most 25 ms and 50 ms), and a 1 s margin.
	bound := 3*rt + 75*time.Millisecond + time.Second
	srv, err := server.New(server.Config{Store: s, Prober: s, OperationTimeout: bound, Token: []byte("t")})
	if err != nil {
		t.Fatal(err)
	}
	// Valid evidence first: an instance that has not probed refuses data calls.
	srv.Refresh(ctx, true)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	proxy.Stall()
	defer proxy.Restore()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/v1/items/"+item.ID.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer t")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	took := time.Since(start)
	var problem struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&problem); err != nil {
		t.Fatalf("decode the answer (HTTP %d): %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.HasSuffix(problem.Type, string(memory.ProblemUnavailable)) {
		t.Fatalf("HTTP %d %s %+v, want 503 application/problem+json of type %s", resp.StatusCode, resp.Header.Get("Content-Type"), problem, memory.ProblemUnavailable)
	}
	if strings.Contains(problem.Detail, "context deadline exceeded") || !strings.Contains(problem.Detail, "timeout") {
		t.Errorf("detail %q: want the backend's own timeout, not the server's deadline", problem.Detail)
	}
	// The indexer's own polling is held too; count only the requests for this item.
	// Each attempt stalls either at the item's HMGET (on a pooled connection) or at the
	// handshake (HELLO) of a new connection, depending on what the pool holds; the indexer's
	// polling is held too and is not counted. Three attempts each ending at the request
	// timeout is also what the answer's time shows.
	var handshakes int
	for _, w := range proxy.HeldWrites() {
		if strings.Contains(string(w), "\r\nhello\r\n") {
			handshakes++
		}
	}
	if n := proxy.HeldContaining(item.ID.String()); n < 1 || n+handshakes < 3 {
		t.Errorf("the stalled Redis received %d requests for the item and %d connection handshakes, want at least one and three attempts in all", n, handshakes)
	}
	if took < 3*rt || took >= bound {
		t.Errorf("answered after %s: three attempts take at least %s, and the typed error must come before the server's bound %s", took, 3*rt, bound)
	}
}
