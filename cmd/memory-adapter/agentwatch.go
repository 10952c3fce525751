package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// watchContent is the content of every item the watch stores; --retrieve-ids expects it back.
const watchContent = `{"note":"stored by agent-check --watch"}`

// watchBodyLimit bounds how much of an answer's body the watch reads: a problem document is
// small, and the watch only wants its type.
const watchBodyLimit = 64 << 10

// runAgentWatch is agent-check --watch: a workload that keeps calling its adapter through the
// binding, as an agent does during an outage or a rollout, and says what every call got, one
// line each:
//
//	agent-check watch: <RFC 3339 time the call was made> store <status> <media type> <problem type or -> [| <problem detail>]
//	agent-check watch: <RFC 3339 time the call was made> store 201 <media type> - | id=<the stored item's id>
//	agent-check watch: <RFC 3339 time the call was made> store error: <transport error> [<where it stopped>]
//	agent-check watch: <RFC 3339 time the call was made> retrieve <status> <media type> <problem type or ->
//
// It is the observer of the e2e outage and rollout specs, which need each answer's status and
// problem type (a typed 503 unavailable, never a refused connection) rather than one verdict,
// so it speaks the wire directly with the contract's client rules and no others: a call is
// sent again only while none of it was written (remote.DoUnsentRetry), as the Go client does. It stores a fresh item per call;
// with --read-back it retrieves each stored item at once and prints "retrieve 200 ... -" only
// when the item came back equal ("retrieve 200 ... mismatch" otherwise). By default every call
// dials afresh; with --keep-alive it keeps its connections between calls, as a real client's
// pool does (the case a rolling server must drain without failing). It ends when ctx does,
// and returns nil then.
func runAgentWatch(ctx context.Context, out io.Writer, root string, f *agentCheckFlags) error {
	dir, err := bindingPath(root, f.adapter)
	if err != nil {
		return err
	}
	b, err := remote.OpenBinding(dir)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	// A call waits as long as the Go client's does (remote.DefaultTimeout: the server's
	// backend budget plus headroom), so an adapter's typed answer that takes its whole
	// backend budget is seen, not cut off as a hang. Five seconds, the old wait, equalled
	// the PostgreSQL adapter's own request budget: under load the typed 503 of an outage
	// came after the agent had given up (docs/development.md, four e2e processes). The
	// binding's transport verifies against ca.crt as it is on disk, and the token is asked
	// of the binding for every call: a rotated token or CA bundle is used as soon as the
	// kubelet projects it.
	client := &http.Client{Timeout: max(f.interval, remote.DefaultTimeout), Transport: b.Transport(nil)}
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		// The line carries when the call was made, not when it ended: a call that hangs
		// until the client's timeout belongs to the moment it was sent.
		at := time.Now().UTC()
		lines := []string{}
		answer, stored := watchStore(ctx, client, b)
		lines = append(lines, "store "+answer)
		if f.readBack && stored != nil {
			lines = append(lines, "retrieve "+watchRetrieve(ctx, client, b, *stored))
		}
		if !f.keepAlive {
			client.CloseIdleConnections()
		}
		if ctx.Err() != nil {
			// The watch ended during the call: what the call got says nothing of the adapter.
			return nil
		}
		for _, l := range lines {
			if _, err := fmt.Fprintf(out, "agent-check watch: %s %s\n", at.Format(time.RFC3339Nano), l); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchStore stores one fresh item and describes the answer: "<status> <media type>
// <problem type or ->", or "error: ..." when no answer came. It returns the item when the
// adapter acknowledged it (201), whose line then ends in " | id=<id>": the acknowledged ids
// are what a failover spec reads back afterwards (--retrieve-ids) to count lost writes.
func watchStore(ctx context.Context, client *http.Client, b *remote.Binding) (string, *memory.Item) {
	it := memory.NewItem([]byte(watchContent), "agent-check")
	body, err := memory.MarshalItem(it)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	answer, status, _ := watchCall(ctx, client, b, http.MethodPost, "/v1/items", body)
	if status != http.StatusCreated {
		return answer, nil
	}
	return answer + " | id=" + it.ID.String(), &it
}

// watchRetrieve reads the item back and describes the answer as watchStore does; a 200 whose
// item differs from the one stored ends in "mismatch" instead of "-".
func watchRetrieve(ctx context.Context, client *http.Client, b *remote.Binding, want memory.Item) string {
	answer, status, data := watchCall(ctx, client, b, http.MethodGet, "/v1/items/"+want.ID.String(), nil)
	if status != http.StatusOK {
		return answer
	}
	var got memory.Item
	if err := json.Unmarshal(data, &got); err != nil || !got.Equal(want) {
		return strings.TrimSuffix(answer, " -") + " mismatch"
	}
	return answer
}

// watchCall makes one call and returns its description, its status (0 when no answer came)
// and, for a 2xx answer, its body (at most watchBodyLimit).
func watchCall(ctx context.Context, client *http.Client, b *remote.Binding, method, path string, body []byte) (string, int, []byte) {
	// Where a failed call went, for the error line: which instance (a Service spreads calls
	// over several), over a new or a pooled connection, and whether the request was sent.
	var (
		mu     sync.Mutex
		peer   = "none"
		reused bool
		wrote  bool
		// phase is the last step of opening a connection that began: a call stuck in "dns"
		// never got an address, one in "connect" never had its SYN answered.
		phase = "pool"
	)
	step := func(p string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			phase = p
		}
	}
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { step("dns")() },
		DNSDone:           func(httptrace.DNSDoneInfo) { step("dns done")() },
		ConnectStart:      func(string, string) { step("connect")() },
		ConnectDone:       func(string, string, error) { step("connected")() },
		TLSHandshakeStart: step("tls"),
		TLSHandshakeDone:  func(tls.ConnectionState, error) { step("tls done")() },
		GotConn: func(ci httptrace.GotConnInfo) {
			mu.Lock()
			defer mu.Unlock()
			peer, reused = ci.Conn.RemoteAddr().String(), ci.Reused
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			wrote = true
		},
	})
	token, err := b.Token()
	if err != nil {
		return "error: " + err.Error(), 0, nil
	}
	// The contract's client retry, and nothing more: a call is sent again only while no byte
	// of it was written (remote.DoUnsentRetry). A 401 is printed as the answer it is, not
	// retried with a re-read token as the Go client does: the watch observes the wire.
	resp, err := remote.DoUnsentRetry(tctx, client, func(ctx context.Context) (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(b.URL(), "/")+path, rd)
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return req, nil
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("error: %v [connection to %s, reused %t, request sent %t, last step %s]", err, peer, reused, wrote, phase), 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, watchBodyLimit))
	if err != nil {
		return "error: reading the answer: " + err.Error(), 0, nil
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if media == "" {
		media = "-"
	}
	problem, detail := "-", ""
	if media == "application/problem+json" {
		var p memory.Problem
		if err := json.Unmarshal(data, &p); err == nil && p.Type != "" {
			problem = string(p.Type)
			if p.Detail != "" {
				// After " | ", so a reader comparing the answer itself can cut it off.
				detail = " | " + truncateDetail(p.Detail)
			}
		}
	}
	return fmt.Sprintf("%d %s %s%s", resp.StatusCode, media, problem, detail), resp.StatusCode, data
}

// truncateDetail keeps a problem's detail to one short line: the watch prints one line a call.
func truncateDetail(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if len(d) > 300 {
		d = d[:300] + "…"
	}
	return d
}
