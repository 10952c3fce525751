package memory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	. "github.com/onsi/gomega"
)

func TestErrorsClassify(t *testing.T) {
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name            string
		err             error
		wantMsg         string
		isAdapter       bool
		isUnsupported   bool
		isUnavailable   bool
		causeReachable  bool
		asUnsupported   bool
		asUnavailable   bool
		asAdapterErrMsg string
	}{
		{
			name:      "adapter error with cause",
			err:       NewAdapterError("store: service rejected the write", cause),
			wantMsg:   "memory adapter error: store: service rejected the write: dial tcp: connection refused",
			isAdapter: true, causeReachable: true,
			asAdapterErrMsg: "store: service rejected the write",
		},
		{
			name:      "adapter error without cause",
			err:       NewAdapterError("malformed payload", nil),
			wantMsg:   "memory adapter error: malformed payload",
			isAdapter: true, asAdapterErrMsg: "malformed payload",
		},
		{
			name:      "unsupported query",
			err:       NewUnsupportedQuery("zeta", "limit", "alpha", "zeta"),
			wantMsg:   "unsupported memory query keys: alpha, limit, zeta",
			isAdapter: true, isUnsupported: true, asUnsupported: true,
			asAdapterErrMsg: "unsupported memory query keys: alpha, limit, zeta",
		},
		{
			name:      "unavailable with cause",
			err:       NewUnavailable("search", cause),
			wantMsg:   "memory adapter unavailable: search: dial tcp: connection refused",
			isAdapter: true, isUnavailable: true, causeReachable: true, asUnavailable: true,
			asAdapterErrMsg: "memory adapter unavailable: search: dial tcp: connection refused",
		},
		{
			name:      "unavailable wrapped twice by callers",
			err:       fmt.Errorf("branch: %w", fmt.Errorf("session: %w", NewUnavailable("retrieve", cause))),
			wantMsg:   "branch: session: memory adapter unavailable: retrieve: dial tcp: connection refused",
			isAdapter: true, isUnavailable: true, causeReachable: true, asUnavailable: true,
			asAdapterErrMsg: "memory adapter unavailable: retrieve: dial tcp: connection refused",
		},
		{
			name:    "an unrelated error is none of them",
			err:     fmt.Errorf("wrapped: %w", cause),
			wantMsg: "wrapped: dial tcp: connection refused", causeReachable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.wantMsg))
			g.Expect(errors.Is(tt.err, ErrAdapter)).To(Equal(tt.isAdapter), "Is ErrAdapter")
			g.Expect(errors.Is(tt.err, ErrUnsupportedQuery)).To(Equal(tt.isUnsupported), "Is ErrUnsupportedQuery")
			g.Expect(errors.Is(tt.err, ErrUnavailable)).To(Equal(tt.isUnavailable), "Is ErrUnavailable")
			g.Expect(errors.Is(tt.err, cause)).To(Equal(tt.causeReachable), "native cause reachable")
			var op *net.OpError
			g.Expect(errors.As(tt.err, &op)).To(Equal(tt.causeReachable), "native cause type reachable")

			var uq *UnsupportedMemoryQuery
			g.Expect(errors.As(tt.err, &uq)).To(Equal(tt.asUnsupported), "As *UnsupportedMemoryQuery")
			var un *MemoryAdapterUnavailable
			g.Expect(errors.As(tt.err, &un)).To(Equal(tt.asUnavailable), "As *MemoryAdapterUnavailable")

			// The seed's hierarchy: both refinements are MemoryAdapterErrors.
			var ae *MemoryAdapterError
			g.Expect(errors.As(tt.err, &ae)).To(Equal(tt.isAdapter), "As *MemoryAdapterError")
			if tt.isAdapter {
				g.Expect(ae.Message).To(Equal(tt.asAdapterErrMsg))
				if tt.causeReachable {
					g.Expect(errors.Is(ae, cause)).To(BeTrue(), "the cause survives As *MemoryAdapterError")
				}
			}
		})
	}
}

func TestUnsupportedQueryKeys(t *testing.T) {
	g := NewWithT(t)
	in := []string{"b", "a", "b"}
	e := NewUnsupportedQuery(in...)
	g.Expect(e.RejectedKeys).To(Equal([]string{"a", "b"}))
	g.Expect(in).To(Equal([]string{"b", "a", "b"}), "the caller's slice is not reordered")
	g.Expect(NewUnsupportedQuery("limit").Error()).To(Equal("unsupported memory query keys: limit"))
}

func TestUnavailableIsNotNotFound(t *testing.T) {
	// A context deadline inside an adapter becomes Unavailable, and the deadline stays visible
	// so callers can tell a timeout from a refused connection.
	g := NewWithT(t)
	err := NewUnavailable("retrieve", context.DeadlineExceeded)
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue())
	g.Expect(errors.Is(err, ErrUnsupportedQuery)).To(BeFalse())
	g.Expect(errors.Is(NewAdapterError("x", nil), ErrUnavailable)).To(BeFalse())
}
