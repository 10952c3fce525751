package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// watchBodyLimit bounds how much of an answer's body the watch reads: a problem document is
// small, and the watch only wants its type.
const watchBodyLimit = 64 << 10

// runAgentWatch is agent-check --watch: a workload that keeps calling its adapter through the
// binding, as an agent does during an outage, and says what every call got, one line each:
//
//	agent-check watch: <RFC 3339 time the call was made> store <status> <media type> <problem type or ->
//	agent-check watch: <RFC 3339 time the call was made> store error: <transport error>
//
// It is the observer of the e2e outage specs, which need each answer's status and problem
// type (a typed 503 unavailable, never a refused connection) rather than one verdict, so it
// speaks the wire directly and adds no client rules of its own. It stores a fresh item per
// call, ends when ctx does, and returns nil then.
func runAgentWatch(ctx context.Context, out io.Writer, root string, f *agentCheckFlags) error {
	if _, err := readBinding(root, f.adapter); err != nil {
		return err
	}
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		// The line carries when the call was made, not when it ended: a call that hangs
		// until the client's timeout belongs to the moment it was sent. The binding is read
		// for every call, as the kubelet projects it: a rotated token or CA bundle is used as
		// soon as it lands.
		at := time.Now().UTC()
		var line string
		b, err := readBinding(root, f.adapter)
		var client *http.Client
		if err == nil {
			client, err = b.httpClient(max(f.interval, 5*time.Second))
		}
		if err != nil {
			line = "error: " + err.Error()
		} else {
			line = watchStore(ctx, client, b)
			client.CloseIdleConnections()
		}
		if _, err := fmt.Fprintf(out, "agent-check watch: %s store %s\n", at.Format(time.RFC3339Nano), line); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchStore stores one fresh item and describes the answer: "<status> <media type>
// <problem type or ->", or "error: ..." when no answer came.
func watchStore(ctx context.Context, client *http.Client, b binding) string {
	body, err := memory.MarshalItem(memory.NewItem([]byte(`{"note":"stored by agent-check --watch"}`), "agent-check"))
	if err != nil {
		return "error: " + err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(b.url, "/")+"/v1/items", bytes.NewReader(body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if media == "" {
		media = "-"
	}
	problem := "-"
	if media == "application/problem+json" {
		var p memory.Problem
		if err := json.NewDecoder(io.LimitReader(resp.Body, watchBodyLimit)).Decode(&p); err == nil && p.Type != "" {
			problem = string(p.Type)
		}
	}
	return fmt.Sprintf("%d %s %s", resp.StatusCode, media, problem)
}
