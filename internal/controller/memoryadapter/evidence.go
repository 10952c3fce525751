package memoryadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// EvidenceReader reads an adapter's GET /v1/evidence. It is an interface so that envtest
// suites point it at a real local `memory-adapter serve` and benchmarks at a fake.
type EvidenceReader interface {
	// ReadEvidence returns the evidence the adapter at baseURL publishes, authenticating with
	// token. Any failure to get a well-formed report is an error.
	ReadEvidence(ctx context.Context, baseURL, token string) (*memory.EvidenceReport, error)
}

// maxEvidenceBytes bounds an evidence body: a report is a few hundred bytes, and the adapter
// is not trusted to keep it so.
const maxEvidenceBytes = 64 << 10

// HTTPEvidenceReader reads evidence over HTTP with a per-read timeout.
type HTTPEvidenceReader struct {
	// Client is the HTTP client; nil means one with Timeout.
	Client *http.Client
	// Timeout bounds one read; zero means 5 s.
	Timeout time.Duration
}

// ReadEvidence implements EvidenceReader.
func (h *HTTPEvidenceReader) ReadEvidence(ctx context.Context, baseURL, token string) (*memory.EvidenceReport, error) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/v1/evidence", nil)
	if err != nil {
		return nil, fmt.Errorf("evidence request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("evidence read: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEvidenceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("evidence read: %w", err)
	}
	if len(body) > maxEvidenceBytes {
		return nil, fmt.Errorf("evidence read: body exceeds %d bytes", maxEvidenceBytes)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, fmt.Errorf("evidence read: HTTP 401: %w", ErrUnauthorized)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("evidence read: HTTP %d", resp.StatusCode)
	}
	var ev memory.EvidenceReport
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, fmt.Errorf("evidence read: malformed report: %w", err)
	}
	return &ev, nil
}
