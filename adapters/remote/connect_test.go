package remote_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
)

// TestDoUnsentRetry: a call is retried only while nothing of it was written, at most
// ConnectAttempts times; a request the server received is never sent twice.
func TestDoUnsentRetry(t *testing.T) {
	var served atomic.Int64
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer ok.Close()
	// A server that reads the whole request, then drops the connection without answering.
	var dropped atomic.Int64
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		dropped.Add(1)
		hj, _ := w.(http.Hijacker)
		c, _, err := hj.Hijack()
		if err == nil {
			_ = c.Close()
		}
	}))
	defer drop.Close()

	for _, tc := range []struct {
		name        string
		url         string
		failDials   int
		wantErr     bool
		wantDials   int
		wantReached *atomic.Int64
		reached     int64
	}{
		{"two dials fail, the third connects", ok.URL, 2, false, 3, &served, 1},
		{"every dial fails: gives up after ConnectAttempts", ok.URL, 100, true, remote.ConnectAttempts, &served, 0},
		{"the request was sent: not retried", drop.URL, 0, true, 1, &dropped, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served.Store(0)
			dropped.Store(0)
			var dials atomic.Int64
			tr := remote.NewTransport()
			tr.DisableKeepAlives = true
			base := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dials.Add(1) <= int64(tc.failDials) {
					return nil, errors.New("planted: no route to host")
				}
				return base(ctx, network, addr)
			}
			client := &http.Client{Transport: tr}
			resp, err := remote.DoUnsentRetry(context.Background(), client, func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodPost, tc.url+"/v1/items", strings.NewReader(`{"id":"x"}`))
			})
			if resp != nil {
				_ = resp.Body.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := dials.Load(); got != int64(tc.wantDials) {
				t.Errorf("%d dials, want %d", got, tc.wantDials)
			}
			if got := tc.wantReached.Load(); got != tc.reached {
				t.Errorf("the server received %d requests, want %d", got, tc.reached)
			}
		})
	}
}
