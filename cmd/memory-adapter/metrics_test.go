package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// TestServeMetrics: the metrics listener serves its handler until stopped, and a taken
// address is an error at start-up rather than a server without metrics.
func TestServeMetrics(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr, stop, err := serveMetrics(log, "127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("served %q", b)
	}
	if _, _, err := serveMetrics(log, addr.String(), h); err == nil {
		t.Fatal("a second listener on a taken address started")
	}
	stop()
	if c, err := net.Dial("tcp", addr.String()); err == nil {
		_ = c.Close()
		t.Fatal("the listener still accepts after stop")
	}
}
