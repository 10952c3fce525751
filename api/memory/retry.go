package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Jitter is how random spread is added to a retry's pause (ADR-0093 D4).
type Jitter string

// The jitter modes.
const (
	// JitterNone waits exactly the backoff.
	JitterNone Jitter = "none"
	// JitterFull waits a uniform random time between zero and the backoff.
	JitterFull Jitter = "full"
	// JitterEqual waits half the backoff plus a uniform random time up to the other half.
	JitterEqual Jitter = "equal"
)

// MaxRetryAttempts bounds RetryPolicy.MaxAttempts, as the CRD does.
const MaxRetryAttempts = 10

// RetryPolicy is how often and how patiently an adapter repeats one operation after a
// failure that is safe to repeat. Its text form, the serve flags' value, is
// "attempts=3,backoff=25ms,max-backoff=200ms,jitter=equal".
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included; 1 means no retry.
	MaxAttempts int
	// Backoff is the pause before the first retry, doubled before each later one.
	Backoff time.Duration
	// MaxBackoff caps the doubled pause; zero means no cap beyond Backoff's doubling.
	MaxBackoff time.Duration
	// Jitter spreads each pause.
	Jitter Jitter
}

// Validate reports a policy no adapter can run.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 1 || p.MaxAttempts > MaxRetryAttempts:
		return fmt.Errorf("attempts %d: want 1 to %d", p.MaxAttempts, MaxRetryAttempts)
	case p.Backoff < 0 || p.MaxBackoff < 0:
		return errors.New("backoff and max-backoff must not be negative")
	case p.MaxBackoff > 0 && p.Backoff > p.MaxBackoff:
		return fmt.Errorf("backoff %s exceeds max-backoff %s", p.Backoff, p.MaxBackoff)
	}
	switch p.Jitter {
	case JitterNone, JitterFull, JitterEqual:
		return nil
	}
	return fmt.Errorf("jitter %q: want none, full or equal", p.Jitter)
}

// Pause is the wait before retry number n (0 for the first retry).
func (p RetryPolicy) Pause(n int) time.Duration {
	b := p.Backoff
	for range n {
		if p.MaxBackoff > 0 && b >= p.MaxBackoff || b > time.Hour {
			break
		}
		b *= 2
	}
	if p.MaxBackoff > 0 {
		b = min(b, p.MaxBackoff)
	}
	if b <= 0 {
		return 0
	}
	switch p.Jitter {
	case JitterFull:
		return rand.N(b + 1) //nolint:gosec // jitter, not a secret
	case JitterEqual:
		return b/2 + rand.N(b/2+1) //nolint:gosec // jitter, not a secret
	}
	return b
}

// String is the policy's text form, which ParseRetryPolicy reads back.
func (p RetryPolicy) String() string {
	return fmt.Sprintf("attempts=%d,backoff=%s,max-backoff=%s,jitter=%s", p.MaxAttempts, p.Backoff, p.MaxBackoff, p.Jitter)
}

// ParseRetryPolicy reads the text form. attempts is required; backoff and max-backoff
// default to zero and jitter to none.
func ParseRetryPolicy(s string) (RetryPolicy, error) {
	p := RetryPolicy{Jitter: JitterNone}
	seen := map[string]bool{}
	for _, field := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok || seen[k] {
			return RetryPolicy{}, fmt.Errorf("retry policy %q: want attempts=N[,backoff=D][,max-backoff=D][,jitter=none|full|equal], each once", s)
		}
		seen[k] = true
		var err error
		switch k {
		case "attempts":
			p.MaxAttempts, err = strconv.Atoi(v)
		case "backoff":
			p.Backoff, err = time.ParseDuration(v)
		case "max-backoff":
			p.MaxBackoff, err = time.ParseDuration(v)
		case "jitter":
			p.Jitter = Jitter(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return RetryPolicy{}, fmt.Errorf("retry policy %q: %s: %w", s, k, err)
		}
	}
	if !seen["attempts"] {
		return RetryPolicy{}, fmt.Errorf("retry policy %q: attempts is required", s)
	}
	if err := p.Validate(); err != nil {
		return RetryPolicy{}, fmt.Errorf("retry policy %q: %w", s, err)
	}
	return p, nil
}
