package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Hard bounds, whatever the flags say: the run is a measurement on a shared machine, not a
// load test.
const (
	maxDuration    = 10 * time.Minute
	maxRequests    = 1_000_000
	maxConcurrency = 32
	maxVerify      = 50_000
)

type config struct {
	backend     string
	duration    time.Duration
	requests    int64
	concurrency int
	adapter     string
	outage      time.Duration
	seed        uint64
	idleConns   int
}

func main() {
	var c config
	flag.StringVar(&c.backend, "backend", "sqlite", "inmemory, sqlite, postgres or redis")
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "time budget for the request phase (at most 10m)")
	flag.Int64Var(&c.requests, "requests", 200_000, "request budget (at most 1,000,000)")
	flag.IntVar(&c.concurrency, "concurrency", 8, "concurrent clients (at most 32)")
	flag.StringVar(&c.adapter, "adapter", "", "memory-adapter binary (default: go build ./cmd/memory-adapter)")
	flag.DurationVar(&c.outage, "outage", 3*time.Second, "how long the backend stays down half-way")
	flag.Uint64Var(&c.seed, "seed", 0, "random seed (0: random)")
	flag.IntVar(&c.idleConns, "idle-conns", 0, "instead of the soak: hold this many idle keep-alive connections and report the adapter's RSS per 1,000 (at most 20,000)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	switch {
	case !slices.Contains([]string{"inmemory", "sqlite", "postgres", "redis"}, c.backend):
		return fmt.Errorf("unknown backend %q", c.backend)
	case c.duration <= 0 || c.duration > maxDuration:
		return fmt.Errorf("-duration must be in (0, %s]", maxDuration)
	case c.requests <= 0 || c.requests > maxRequests:
		return fmt.Errorf("-requests must be in (0, %d]", maxRequests)
	case c.concurrency <= 0 || c.concurrency > maxConcurrency:
		return fmt.Errorf("-concurrency must be in (0, %d]", maxConcurrency)
	case c.idleConns < 0 || c.idleConns > maxIdleConns:
		return fmt.Errorf("-idle-conns must be in [0, %d]", maxIdleConns)
	}
	if c.seed == 0 {
		c.seed = mrand.Uint64()
	}
	dir, err := os.MkdirTemp("", "mao-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// PostgreSQL runs as its own user when we are root; it must be able to traverse to its
	// data directory (the token file inside stays 0600).
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	if c.adapter == "" {
		c.adapter = filepath.Join(dir, "memory-adapter")
		build := exec.Command("go", "build", "-o", c.adapter, "./cmd/memory-adapter")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/memory-adapter (run from the repository root): %w", err)
		}
	}
	be, err := startBackend(c.backend, dir)
	if err != nil {
		return err
	}
	defer be.stop()
	ad := &adapter{bin: c.adapter, dir: dir, backend: c.backend, conn: be.conn}
	if err := ad.start(); err != nil {
		return err
	}
	defer ad.stop()

	if c.idleConns > 0 {
		steps, err := measureIdle(ad, c.idleConns, max(c.idleConns/4, 1))
		if err != nil {
			return fmt.Errorf("idle connections: %w", err)
		}
		reportIdle(os.Stdout, c.backend, steps)
		return nil
	}

	r := newRun(c, ad.url(), ad.token)
	fmt.Fprintf(os.Stderr, "soak: backend %s, %d clients, budget %s / %d requests, seed %d\n", c.backend, c.concurrency, c.duration, c.requests, c.seed)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range c.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(ctx, mrand.New(mrand.NewPCG(c.seed, uint64(i))))
		}()
	}
	// Half-way, the backend goes down hard and comes back.
	outageErr := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			outageErr <- errors.New("the run ended before the outage")
			return
		case <-time.After(c.duration / 2):
		}
		outageErr <- r.outage(be, ad, c.outage)
	}()
	wg.Wait()
	if err := <-outageErr; err != nil {
		return fmt.Errorf("outage: %w", err)
	}
	elapsed := time.Since(start)
	missing, checked, err := r.verify()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	ad.stop()
	r.report(os.Stdout, c, elapsed, missing, checked, ad)
	return nil
}

// freePort returns a loopback port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// backend is the throwaway database server behind the adapter, or nothing for the embedded
// backends (whose "kill" is the adapter process's own).
type backend struct {
	name, dir, conn string
}

func startBackend(name, dir string) (*backend, error) {
	b := &backend{name: name, dir: filepath.Join(dir, name)}
	var key string
	switch name {
	case "postgres":
		key = "MAO_TEST_POSTGRES_URL="
	case "redis":
		key = "MAO_TEST_REDIS_ADDR="
	default:
		return b, nil
	}
	out, err := exec.Command("hack/"+name+"-server.sh", "start", b.dir).Output()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			b.conn = v
		}
	}
	if b.conn == "" || !loopbackConn(b.conn) {
		return nil, fmt.Errorf("start %s: no loopback address in the script's output", name)
	}
	return b, nil
}

// loopbackConn keeps the loopback-only rule even if a script changes.
func loopbackConn(conn string) bool {
	return strings.Contains(conn, "@127.0.0.1:") || strings.HasPrefix(conn, "127.0.0.1:")
}

func (b *backend) script(args ...string) error {
	cmd := exec.Command("hack/"+b.name+"-server.sh", append(args, b.dir)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	return cmd.Run()
}

func (b *backend) kill() error {
	if b.name == "postgres" {
		return b.script("crash")
	}
	return b.script("kill")
}

func (b *backend) resume() error {
	if b.name == "postgres" {
		return b.script("resume")
	}
	return b.script("start")
}

func (b *backend) stop() {
	if b.name == "postgres" || b.name == "redis" {
		_ = b.script("stop")
	}
}

// adapter is the memory-adapter serve child process.
type adapter struct {
	bin, dir, backend, conn string
	token                   string
	port                    int
	scope                   string
	cmd                     *exec.Cmd
	logs                    bytes.Buffer
	logMu                   sync.Mutex
	peakRSSKiB              int64
	restarts                int
	done                    chan struct{}
}

func (a *adapter) url() string { return "http://127.0.0.1:" + strconv.Itoa(a.port) }

func (a *adapter) start() error {
	if a.token == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		a.token = hex.EncodeToString(b[:])
		a.scope = "soak-" + hex.EncodeToString(b[:4])
		if err := os.WriteFile(filepath.Join(a.dir, "token"), []byte(a.token), 0o600); err != nil {
			return err
		}
		p, err := freePort()
		if err != nil {
			return err
		}
		a.port = p
	}
	args := []string{"serve", "--backend", a.backend, "--listen", "127.0.0.1:" + strconv.Itoa(a.port),
		"--token-file", filepath.Join(a.dir, "token"), "--scope", a.scope, "--probe-period", "1s", "--log-level", "warn"}
	if a.backend == "sqlite" {
		args = append(args, "--sqlite-path", filepath.Join(a.dir, "soak.db"))
	}
	cmd := exec.Command(a.bin, args...)
	cmd.Env = append(os.Environ(), "MEMORY_ADAPTER_CONNECTION="+a.conn)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	a.cmd = cmd
	a.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			a.logMu.Lock()
			if a.logs.Len() < 64<<20 {
				a.logs.Write(sc.Bytes())
				a.logs.WriteByte('\n')
			}
			a.logMu.Unlock()
		}
	}()
	go a.watchRSS(cmd.Process.Pid, a.done)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(a.url() + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the adapter did not become ready in 60s")
}

// watchRSS samples the process's VmHWM (the kernel's own peak resident set) until it exits.
func (a *adapter) watchRSS(pid int, done chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if kib, err := procStatusKiB(pid, "VmHWM"); err == nil && kib > atomic.LoadInt64(&a.peakRSSKiB) {
			atomic.StoreInt64(&a.peakRSSKiB, kib)
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

func (a *adapter) kill() {
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	_ = a.cmd.Wait()
	close(a.done)
	a.cmd = nil
}

func (a *adapter) stop() {
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-waited
	}
	close(a.done)
	a.cmd = nil
}

func (a *adapter) panics() int {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	s := a.logs.String()
	return strings.Count(s, "panic:") + strings.Count(s, "handler panicked")
}
