package health

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// EvidenceReader reads an adapter's GET /v1/evidence. It is an interface so that envtest
// suites point it at a real local `memory-adapter serve` and benchmarks at a fake.
type EvidenceReader interface {
	// ReadEvidence returns the evidence the adapter at t publishes, authenticating with its
	// token. Any failure to get a well-formed report is an error.
	ReadEvidence(ctx context.Context, t EvidenceTarget) (*memory.EvidenceReport, error)
}

// EvidenceTarget is one evidence read: where, with which token, and for an https address
// the name the adapter's certificate must carry (a pod is read at its address, which no
// certificate names).
type EvidenceTarget struct {
	// URL is the adapter's base URL (a pod's address, or an override).
	URL string
	// Token is the adapter's bearer token (never logged).
	Token string
	// ServerName is the Service name the certificate is issued for; empty for plain HTTP.
	ServerName string
}

// maxEvidenceBytes bounds an evidence body: a report is a few hundred bytes, and the adapter
// is not trusted to keep it so.
const maxEvidenceBytes = 64 << 10

// serverNameKey carries an https read's expected certificate name to the shared transport's
// TLS dial.
type serverNameKey struct{}

// HTTPEvidenceReader reads evidence over HTTP(S) with a per-read timeout.
type HTTPEvidenceReader struct {
	// Client is the HTTP client; nil means one shared client whose https connections trust
	// RootCAs and check the target's ServerName.
	Client *http.Client
	// RootCAs are the CAs an adapter's certificate must chain to: the operator's own.
	RootCAs *x509.CertPool
	// Timeout bounds one read; zero means 5 s.
	Timeout time.Duration

	once   sync.Once
	shared *http.Client
}

// client is the shared client. Every read dials afresh and the TLS dial verifies the
// certificate against the name that read expects: a transport pools connections by address
// alone, so a kept connection, verified for one adapter's name, would answer a read that
// expects another's (an address reused by another adapter's pod). A handshake per read is
// cheap at a read per adapter per period, and no idle connection per adapter is held.
func (h *HTTPEvidenceReader) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	h.once.Do(func() {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DisableKeepAlives = true
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			name, _ := ctx.Value(serverNameKey{}).(string)
			if name == "" {
				// Without the expected name a certificate for any adapter would pass.
				return nil, errors.New("evidence read: an https address without the name its certificate must carry")
			}
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
				Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: h.RootCAs, ServerName: name}}
			return d.DialContext(ctx, network, addr)
		}
		h.shared = &http.Client{Transport: tr}
	})
	return h.shared
}

// ReadEvidence implements EvidenceReader.
func (h *HTTPEvidenceReader) ReadEvidence(ctx context.Context, t EvidenceTarget) (*memory.EvidenceReport, error) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	client := h.client()
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, serverNameKey{}, t.ServerName), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.URL, "/")+"/v1/evidence", nil)
	if err != nil {
		return nil, fmt.Errorf("evidence request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
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
