package tcpproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// dialTimeout bounds how long a proxied connection waits for the upstream server, so a dead
// upstream turns into a closed client connection instead of a hang.
const dialTimeout = 5 * time.Second

// Proxy forwards loopback TCP connections to one upstream address. It is safe for concurrent
// use; the zero value is not usable, call New.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	cut    bool
	closed bool
	conns  map[net.Conn]struct{}
	// release is non-nil while stalled; closing it lets held bytes through.
	release chan struct{}
	held    [][]byte

	wg sync.WaitGroup
}

// New starts a proxy on a free loopback port that forwards to target ("host:port").
func New(target string) (*Proxy, error) {
	if target == "" {
		return nil, errors.New("tcpproxy: empty target address")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's listening address ("127.0.0.1:port").
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the upstream address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Cut closes every live connection and makes the proxy refuse new ones (they are accepted and
// closed at once, so the client sees a reset or EOF rather than a hang) until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.closeConnsLocked()
}

// Restore lets new connections through again after Cut, and releases what Stall held.
// Connections closed by Cut stay closed.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.releaseLocked()
}

// Stall holds every byte clients send from now on, neither forwarding nor answering it, until
// Restore: a backend that keeps its connections open and stops answering, the fault behind a
// client's read timeout. New connections are still accepted.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.release == nil {
		p.release = make(chan struct{})
	}
}

// Held counts the client writes Stall has held (one per request a client sent while the
// proxy stalled, as long as each request arrives in one write).
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// HeldWrites returns copies of the held writes.
func (p *Proxy) HeldWrites() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.held)
}

// HeldContaining counts the held writes that contain s, to tell one call's requests from a
// client's background traffic.
func (p *Proxy) HeldContaining(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, b := range p.held {
		if bytes.Contains(b, []byte(s)) {
			n++
		}
	}
	return n
}

func (p *Proxy) releaseLocked() {
	if p.release != nil {
		close(p.release)
		p.release = nil
	}
}

// hold blocks while the proxy stalls, recording the held write.
func (p *Proxy) hold(b []byte) {
	p.mu.Lock()
	release := p.release
	if release != nil {
		p.held = append(p.held, bytes.Clone(b))
	}
	p.mu.Unlock()
	if release != nil {
		<-release
	}
}

// IsCut reports whether the proxy is currently refusing connections.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Faulting reports whether a fault is in effect: the proxy cuts (Cut) or stalls (Stall). A
// connection that fails while it is not faulting failed on the path to the server, not by a
// fault a case injected.
func (p *Proxy) Faulting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut || p.release != nil
}

// ActiveConns returns the number of client connections currently forwarded.
func (p *Proxy) ActiveConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection and waits for the forwarding goroutines.
// It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.closeConnsLocked()
	p.releaseLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) closeConnsLocked() {
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// track registers c unless the proxy is cut or closed; it reports whether c may be used.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		if !p.track(client) {
			_ = client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	defer client.Close()
	upstream, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		return
	}
	if !p.track(upstream) {
		_ = upstream.Close()
		return
	}
	defer p.untrack(upstream)
	defer upstream.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Closing both ends makes the other direction's Copy return too.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go func() {
		// Client to upstream goes chunk by chunk, so that Stall can hold a request.
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				p.hold(buf[:n])
				if _, werr := upstream.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = upstream.Close()
		_ = client.Close()
		done <- struct{}{}
	}()
	go pipe(client, upstream)
	<-done
	<-done
}
