package memory

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetryPolicy(t *testing.T) {
	for in, want := range map[string]struct {
		p   RetryPolicy
		err string
	}{
		"attempts=1": {p: RetryPolicy{MaxAttempts: 1, Jitter: JitterNone}},
		"attempts=3,backoff=25ms,max-backoff=200ms,jitter=equal": {p: RetryPolicy{MaxAttempts: 3, Backoff: 25 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Jitter: JitterEqual}},
		" attempts=2 , jitter=full ":                             {p: RetryPolicy{MaxAttempts: 2, Jitter: JitterFull}},
		"":                                                       {err: "want attempts=N"},
		"backoff=1s":                                             {err: "attempts is required"},
		"attempts=0":                                             {err: "want 1 to 10"},
		"attempts=11":                                            {err: "want 1 to 10"},
		"attempts=x":                                             {err: "invalid syntax"},
		"attempts=2,attempts=3":                                  {err: "each once"},
		"attempts=2,backoff=2s,max-backoff=1s":                   {err: "exceeds max-backoff"},
		"attempts=2,backoff=-1s":                                 {err: "must not be negative"},
		"attempts=2,jitter=some":                                 {err: `jitter "some"`},
		"attempts=2,colour=red":                                  {err: `unknown key "colour"`},
	} {
		got, err := ParseRetryPolicy(in)
		if want.err != "" {
			if err == nil || !strings.Contains(err.Error(), want.err) {
				t.Errorf("%q: error %v, want one containing %q", in, err, want.err)
			}
			continue
		}
		if err != nil || got != want.p {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want.p)
			continue
		}
		if back, err := ParseRetryPolicy(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
}

func TestRetryPolicyPause(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, Backoff: 25 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Jitter: JitterNone}
	for n, want := range []time.Duration{25, 50, 100, 200, 200, 200} {
		if got := p.Pause(n); got != want*time.Millisecond {
			t.Errorf("pause %d = %s, want %s", n, got, want*time.Millisecond)
		}
	}
	if got := (RetryPolicy{MaxAttempts: 2, Backoff: time.Second}).Pause(70); got <= 0 {
		t.Errorf("an uncapped doubling overflowed: %s", got)
	}
	for range 200 {
		eq := RetryPolicy{MaxAttempts: 3, Backoff: 100 * time.Millisecond, Jitter: JitterEqual}.Pause(0)
		full := RetryPolicy{MaxAttempts: 3, Backoff: 100 * time.Millisecond, Jitter: JitterFull}.Pause(0)
		if eq < 50*time.Millisecond || eq > 100*time.Millisecond || full < 0 || full > 100*time.Millisecond {
			t.Fatalf("equal jitter %s (want 50-100ms), full jitter %s (want 0-100ms)", eq, full)
		}
	}
}
