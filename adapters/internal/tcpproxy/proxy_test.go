package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// echoServer answers every line with the same line, until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestForwardCutRestore(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer p.Close()

	c1 := dial(t, p.Addr())
	if got, err := roundTrip(c1, "hello"); err != nil || got != "hello" {
		t.Fatalf("forward: got %q, %v; want hello", got, err)
	}

	p.Cut()
	if !p.IsCut() {
		t.Fatal("IsCut after Cut = false")
	}
	// The live connection must be dead now: a read either fails or hits EOF.
	if got, err := roundTrip(c1, "after-cut"); err == nil {
		t.Fatalf("live connection survived Cut: got %q", got)
	}
	// New connections are accepted and closed at once.
	c2 := dial(t, p.Addr())
	if got, err := roundTrip(c2, "refused"); err == nil {
		t.Fatalf("new connection forwarded while cut: got %q", got)
	}
	if n := p.ActiveConns(); n != 0 {
		t.Fatalf("ActiveConns while cut = %d, want 0", n)
	}

	p.Restore()
	c3 := dial(t, p.Addr())
	if got, err := roundTrip(c3, "back"); err != nil || got != "back" {
		t.Fatalf("after Restore: got %q, %v; want back", got, err)
	}
}

func TestUpstreamDown(t *testing.T) {
	// Reserve a port, then free it, so nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	p, err := New(addr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, "x"); err == nil {
		t.Fatalf("forwarded to a dead upstream: got %q", got)
	}
}

func TestCloseIdempotentAndStopsListening(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, "x"); err != nil {
		t.Fatalf("forward: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := roundTrip(c, "y"); err == nil {
		t.Fatal("connection survived Close")
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		_ = c2.Close()
		t.Fatal("proxy still accepts after Close")
	}
}

func TestNewRejectsEmptyTarget(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
}

func TestConcurrentConnections(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := strings.Repeat("m", i+1)
			got, err := roundTrip(c, msg)
			if err != nil {
				errs <- err
				return
			}
			if got != msg {
				errs <- io.ErrUnexpectedEOF
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent round trip: %v", err)
	}
}

func TestStallHoldsRequestsUntilRestore(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, "before"); err != nil || got != "before" {
		t.Fatalf("forward: got %q, %v", got, err)
	}
	p.Stall()
	if err := c.SetDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatalf("write while stalled: %v", err)
	}
	r := bufio.NewReader(c)
	var ne net.Error
	if _, err := r.ReadString('\n'); err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a stalled request was answered or failed otherwise: %v", err)
	}
	if p.Held() != 1 {
		t.Fatalf("Held = %d, want 1", p.Held())
	}
	// A new connection is accepted, and its request held too.
	c2 := dial(t, p.Addr())
	if _, err := io.WriteString(c2, "second\n"); err != nil {
		t.Fatal(err)
	}
	gomega.NewWithT(t).Eventually(p.Held).WithTimeout(5*time.Second).WithPolling(5*time.Millisecond).Should(gomega.Equal(2), "Held")
	p.Restore()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after Restore the held request got %q, %v", got, err)
	}
}

// TestFaulting: a cut and a stall are faults until Restore; nothing else is.
func TestFaulting(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	for _, step := range []struct {
		name string
		do   func()
		want bool
	}{
		{"new", func() {}, false},
		{"cut", p.Cut, true},
		{"restored after cut", p.Restore, false},
		{"stalled", p.Stall, true},
		{"restored after stall", p.Restore, false},
	} {
		step.do()
		if got := p.Faulting(); got != step.want {
			t.Errorf("%s: Faulting() = %v, want %v", step.name, got, step.want)
		}
	}
}
