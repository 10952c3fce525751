package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Doorbell tells whoever decides the adapter's verdict that its evidence changed. A ring
// carries no evidence, only that there is something new to read: the operator then reads
// GET /v1/evidence over its own authenticated channel, as on every period. So a ring needs
// no credential, and a forged one costs an early read and nothing else.
type Doorbell interface {
	// Ring announces a change once; an error means the announcement may not have arrived.
	Ring(ctx context.Context) error
}

// RecoveryProbePeriod is how often the backend is probed while the evidence invalidates the
// manifest. Every data call is then answered 503 without reaching the backend, so only a probe
// can see it return; a one-second probe costs the backend one cheap call a second, and keeps
// the time between the backend's return and the adapter's first success (and its doorbell)
// within a second instead of a whole probe period.
const RecoveryProbePeriod = time.Second

// doorbellAttemptTimeout bounds one ring.
const doorbellAttemptTimeout = 2 * time.Second

// doorbellSchedule is the pause before each retry of a ring. Only the operator's elected
// leader listens for rings, and the Service in front of its replicas picks one per connection:
// quick retries reach the leader within half a second with a probability of 1 - 2^-10 when two
// replicas run, and the slower tail covers a leader election in progress. After the last try
// the change waits for the operator's next periodic read.
var doorbellSchedule = append(slices.Repeat([]time.Duration{50 * time.Millisecond}, 10),
	slices.Repeat([]time.Duration{time.Second}, 10)...)

// HTTPDoorbell rings by POSTing an empty body to URL (the operator's doorbell Service, with
// the adapter's namespace and name in the path) and expects 202 Accepted.
type HTTPDoorbell struct {
	// URL is where rings are POSTed.
	URL string
	// Client sends the rings; nil means one that opens a connection per ring, so that each
	// retry may reach another replica behind the Service.
	Client *http.Client
}

// NewHTTPDoorbell checks raw as a doorbell URL (http or https, a host, no credentials) and
// returns the doorbell that rings it.
func NewHTTPDoorbell(raw string) (*HTTPDoorbell, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("doorbell URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("doorbell URL %q: want http(s)://host[:port]/path, without credentials, query or fragment", raw)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &HTTPDoorbell{URL: raw, Client: &http.Client{Transport: tr, Timeout: doorbellAttemptTimeout,
		// A redirect would send the ring somewhere the operator did not name.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Ring implements Doorbell.
func (d *HTTPDoorbell) Ring(ctx context.Context) error {
	c := d.Client
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, nil)
	if err != nil {
		return fmt.Errorf("doorbell: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("doorbell: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("doorbell: HTTP %d", resp.StatusCode)
	}
	return nil
}

// verdictKey is what of the evidence the operator's verdict depends on: validity, its reason,
// the service version and the failed probes. The observation time and an eventual index's lag
// move without changing the verdict, and ringing for them would only cost reads.
func verdictKey(ev memory.EvidenceReport) string {
	var b strings.Builder
	b.WriteString(strconv.FormatBool(ev.ManifestValid))
	for _, s := range []string{ev.Reason, ev.ServiceVersion, ev.InitialServiceVersion} {
		b.WriteByte(0)
		b.WriteString(s)
	}
	for _, p := range ev.Probes {
		if !p.OK {
			b.WriteByte(0)
			b.WriteString(p.Name)
		}
	}
	return b.String()
}

// signal wakes the goroutine waiting on ch without blocking: ch has room for one signal, and
// signals that arrive while one is pending are the same news.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ringOnChange rings the doorbell after every change of the verdict's inputs until ctx ends.
// Changes that arrive while a ring is under way are announced by one more ring.
func (s *Server) ringOnChange(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
		s.ring(ctx)
	}
}

// ring announces one change, retrying on doorbellSchedule.
func (s *Server) ring(ctx context.Context) {
	var err error
	for try := 0; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, doorbellAttemptTimeout)
		err = s.cfg.Doorbell.Ring(rctx)
		cancel()
		if err == nil {
			s.metrics.rings.WithLabelValues("accepted").Inc()
			return
		}
		if try == len(doorbellSchedule) || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(doorbellSchedule[try])
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return // shutting down
	}
	s.metrics.rings.WithLabelValues("failed").Inc()
	s.log.Warn("Doorbell not answered: the operator sees the evidence change at its next periodic read", "error", err.Error())
}

// kickRefresh asks the monitor for an early probe: a data call just found the backend
// unavailable, which the evidence may not say yet.
func (s *Server) kickRefresh() { signal(s.kick) }
