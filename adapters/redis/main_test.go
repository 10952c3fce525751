package redis

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisAddr is the live server every test uses: MAO_TEST_REDIS_ADDR when set, otherwise a
// throwaway server that TestMain starts with hack/redis-server.sh and stops at the end.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// go-redis logs every refused dial; the outage tests provoke hundreds on purpose.
	goredis.SetLogger(quietLogger{})
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		// A fuzz worker only runs the (pure) fuzz target; the coordinating process owns the
		// server, so workers must not each start and abandon one.
		return m.Run()
	}
	if addr := os.Getenv("MAO_TEST_REDIS_ADDR"); addr != "" {
		redisAddr = addr
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "mao-redis-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "redis tests: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	addr, err := startServer(dir)
	if err != nil {
		// Never skip: a live adapter test that cannot reach a server fails loudly.
		fmt.Fprintln(os.Stderr, "redis tests: cannot start a Redis server (set MAO_TEST_REDIS_ADDR or let hack/redis-server.sh install Debian's redis-server):", err)
		return 1
	}
	redisAddr = addr
	defer func() {
		if err := serverScript("stop", dir); err != nil {
			fmt.Fprintln(os.Stderr, "redis tests: stop server:", err)
		}
	}()
	return m.Run()
}

func scriptPath() string {
	return filepath.Join("..", "..", "hack", "redis-server.sh")
}

// startServer runs `redis-server.sh start dir` and returns the address it printed.
func startServer(dir string) (string, error) {
	cmd := exec.Command(scriptPath(), "start", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MAO_TEST_REDIS_ADDR="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("script printed no MAO_TEST_REDIS_ADDR line: %q", out)
}

func serverScript(verb, dir string) error {
	cmd := exec.Command(scriptPath(), verb, dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", scriptPath(), verb, err, out)
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// testCtx is a per-test context with a deadline, so a hang fails instead of stalling.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newHarness returns a harness on a fresh scope, closed (and the scope dropped) at cleanup.
func newHarness(t *testing.T, filters ...string) *Harness {
	t.Helper()
	opts := HarnessOptions{Addr: redisAddr}
	if filters != nil {
		opts.SupportedFilters = filters
	}
	h, err := NewHarness(testCtx(t), opts)
	if err != nil {
		t.Fatalf("new harness: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close harness: %v", err)
		}
	})
	return h
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}
