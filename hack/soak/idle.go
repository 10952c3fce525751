package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// maxIdleConns bounds the idle-connection measurement: each connection is a file descriptor
// in this process and in the adapter.
const maxIdleConns = 20_000

// idleStep is one reading of the adapter's resident set with some connections held open.
type idleStep struct {
	conns  int
	rssKiB int64
}

// measureIdle opens n keep-alive connections to the adapter in batches, each answering one
// authenticated request and then left idle, and reads the adapter's VmRSS after each batch.
// Each connection completes a request so that the server has given it the goroutine and
// buffers a real client's connection holds between requests; a bare TCP connect would only
// measure the accept queue. The readings are taken well inside the server's 60 s idle
// timeout, so no connection is closed by the server while it is counted.
func measureIdle(ad *adapter, n, batch int) ([]idleStep, error) {
	pid := ad.cmd.Process.Pid
	req := "GET /v1/items/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
		"Authorization: Bearer " + ad.token + "\r\nAccept: application/json\r\n\r\n"
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// One warm connection first, so the baseline includes what the first request allocates
	// (handler set-up, the store's first statement) rather than charging it to the batches.
	if err := idleRequest(ad, req, &conns); err != nil {
		return nil, err
	}
	settle()
	rss, err := vmRSS(pid)
	if err != nil {
		return nil, err
	}
	steps := []idleStep{{conns: len(conns), rssKiB: rss}}
	for len(conns) < n {
		for range min(batch, n-len(conns)) {
			if err := idleRequest(ad, req, &conns); err != nil {
				return steps, fmt.Errorf("connection %d: %w", len(conns)+1, err)
			}
		}
		settle()
		if rss, err = vmRSS(pid); err != nil {
			return steps, err
		}
		steps = append(steps, idleStep{conns: len(conns), rssKiB: rss})
	}
	return steps, nil
}

// idleRequest dials one connection, sends one retrieve of an id that does not exist and reads
// the whole answer (the contract's 404 problem), and keeps the connection.
func idleRequest(ad *adapter, req string, conns *[]net.Conn) error {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(ad.url(), "http://"), 5*time.Second)
	if err != nil {
		return err
	}
	*conns = append(*conns, c)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("retrieve of a missing id answered %d, want 404", resp.StatusCode)
	}
	if resp.Close {
		return errors.New("the server closed the connection instead of keeping it alive")
	}
	return c.SetDeadline(time.Time{})
}

// settle gives the server's connection goroutines time to park in their next read, where an
// idle connection spends its life, before the resident set is read.
func settle() { time.Sleep(time.Second) }

// vmRSS reads the process's current resident set in KiB.
func vmRSS(pid int) (int64, error) { return procStatusKiB(pid, "VmRSS") }

// procStatusKiB reads one "Name:   123 kB" field of /proc/PID/status.
func procStatusKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s line in /proc/%d/status", field, pid)
}

// reportIdle writes the readings and the cost per 1,000 connections between the first and
// the last reading.
func reportIdle(w io.Writer, backend string, steps []idleStep) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "backend\t%s\n", backend)
	for _, s := range steps {
		fmt.Fprintf(tw, "idle connections %d\tVmRSS %.1f MiB\n", s.conns, float64(s.rssKiB)/1024)
	}
	if len(steps) > 1 {
		first, last := steps[0], steps[len(steps)-1]
		per := float64(last.rssKiB-first.rssKiB) / float64(last.conns-first.conns) * 1000 / 1024
		fmt.Fprintf(tw, "per 1,000 idle connections\t%.1f MiB (from %d to %d connections)\n", per, first.conns, last.conns)
	}
	_ = tw.Flush()
}
