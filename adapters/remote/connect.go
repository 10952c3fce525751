package remote

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Connection attempts. A call whose connection could not be opened (the name did not
// resolve, the SYN was not answered, the TLS handshake did not finish) sent nothing to the
// adapter, so trying again on a new connection is safe for every operation, a store included:
// behind a Service a new connection is balanced afresh, so it usually reaches another
// instance, or the same one once the network path has settled (a pod that has just started or
// is leaving; a DNS answer lost on the way).
const (
	// ConnectTimeout bounds one attempt to open a connection, name resolution included, so a
	// stalled attempt leaves room in the call's deadline for another.
	ConnectTimeout = 2 * time.Second
	// TLSHandshakeTimeout bounds one TLS handshake.
	TLSHandshakeTimeout = 3 * time.Second
	// ConnectAttempts is how many connections one call may try to open when none could be.
	ConnectAttempts = 3
)

// NewTransport is the transport a Store builds when none is given: pooled connections with
// ConnectTimeout per dial and TLSHandshakeTimeout per handshake; the caller sets its TLS
// configuration.
func NewTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = TLSHandshakeTimeout
	tr.MaxIdleConnsPerHost = 32
	return tr
}

// DoUnsentRetry sends the request newRequest builds with client, and builds and sends it again
// (up to ConnectAttempts in all) while an attempt fails before a byte of the request was
// written: the client retry the contract's clients document (docs/operator.md, "Rollouts,
// drains and lost nodes"). Once anything was written, the attempt's outcome is the call's, as
// a request the adapter may have acted on is never sent twice. newRequest must return a new
// request each time, with its own body reader.
func DoUnsentRetry(ctx context.Context, client *http.Client, newRequest func(context.Context) (*http.Request, error)) (*http.Response, error) {
	var err error
	for attempt := 1; ; attempt++ {
		a := new(unsentAttempt)
		// WroteHeaders comes before any byte of a body: from then on the adapter may have
		// read enough to act.
		a.trace.WroteHeaders = a.wroteHeaders
		var req *http.Request
		req, err = newRequest(httptrace.WithClientTrace(ctx, &a.trace))
		if err != nil {
			return nil, err
		}
		var resp *http.Response
		resp, err = client.Do(req)
		if err == nil {
			return resp, nil
		}
		if a.wrote.Load() || attempt >= ConnectAttempts || ctx.Err() != nil {
			return nil, err
		}
	}
}

// unsentAttempt is one attempt's trace and what it saw, in one allocation.
type unsentAttempt struct {
	wrote atomic.Bool
	trace httptrace.ClientTrace
}

func (a *unsentAttempt) wroteHeaders() { a.wrote.Store(true) }
