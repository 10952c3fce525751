package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// beforeSend is an error pgconn.SafeToRetry accepts: nothing reached the server.
type beforeSend struct{ safe bool }

func (e beforeSend) Error() string     { return "dial: connection refused" }
func (e beforeSend) SafeToRetry() bool { return e.safe }

func TestRetryFollowsThePolicyAndOnlyBeforeSend(t *testing.T) {
	policy := memory.RetryPolicy{MaxAttempts: 4, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Jitter: memory.JitterNone}
	s := &Store{retries: [3]memory.RetryPolicy{DefaultRetry, policy, DefaultRetry}}
	for name, tc := range map[string]struct {
		op    int
		err   error
		calls int
	}{
		"the retrieve policy's four attempts": {opRetrieve, beforeSend{safe: true}, 4},
		"the default's two for store":         {opStore, beforeSend{safe: true}, 2},
		"a statement that may have run":       {opRetrieve, beforeSend{safe: false}, 1},
		"success":                             {opRetrieve, nil, 1},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			err := s.retry(context.Background(), tc.op, func(context.Context) error { calls++; return tc.err })
			if calls != tc.calls || !errors.Is(err, tc.err) {
				t.Fatalf("%d calls, error %v; want %d calls ending in %v", calls, err, tc.calls, tc.err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	_ = s.retry(ctx, opRetrieve, func(context.Context) error { calls++; return beforeSend{safe: true} })
	if calls != 1 {
		t.Fatalf("an ended call was retried: %d calls", calls)
	}
}

func TestOpenRefusesAPolicyItCannotRun(t *testing.T) {
	_, err := Open(context.Background(), Options{URL: "postgres://127.0.0.1:1/x", Scope: "s", SearchRetry: memory.RetryPolicy{MaxAttempts: 99}})
	if !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("Open with 99 attempts: %v, want an adapter error before any connection", err)
	}
}
