package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Defaults for Options. The case timeout is generous because live backends (a Redis index,
// a PostgreSQL server on a loaded CI machine) are slow on their first call; the fake finishes
// a whole run in milliseconds.
const (
	DefaultCaseTimeout       = 30 * time.Second
	DefaultVisibilityTimeout = 10 * time.Second
	DefaultPollInterval      = 10 * time.Millisecond
)

// AccuracySummary is the outcome of the manifest-accuracy table: how many (knob, lie) pairs
// the suite caught and how many truthful configurations passed.
type AccuracySummary struct {
	// Caught is the number of (knob, lie) pairs on which the suite failed as expected.
	Caught int `json:"caught"`
	// Total is the number of (knob, lie) pairs in the table.
	Total int `json:"total"`
	// TruthfulPassed is the number of truthful configurations the suite passed.
	TruthfulPassed int `json:"truthful_passed"`
	// Truthful is the number of truthful configurations in the table.
	Truthful int `json:"truthful"`
	// Problems describes every row that did not behave as expected.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether every lie was caught and every truthful configuration passed.
func (s AccuracySummary) OK() bool {
	return s.Total > 0 && s.Caught == s.Total && s.Truthful > 0 && s.TruthfulPassed == s.Truthful && len(s.Problems) == 0
}

// Options tune a run. The zero value is valid.
type Options struct {
	// CaseTimeout bounds each case, including its Reset and MakeStore; 0 means
	// DefaultCaseTimeout. A case that exceeds it is Failed and the run continues.
	CaseTimeout time.Duration
	// VisibilityTimeout bounds how long a case polls search for stored items after
	// MakeSearchIndexVisible returned; 0 means DefaultVisibilityTimeout.
	VisibilityTimeout time.Duration
	// PollInterval is the pause between such polls; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// AdapterVersion is recorded in the report (the adapter build under test).
	AdapterVersion string
	// Accuracy runs the manifest-accuracy table. Nil means the built-in table over the
	// deterministic fake (RunAccuracyTable), which proves that this build of the suite
	// catches every manifest lie the fake can express.
	Accuracy func(ctx context.Context) (AccuracySummary, error)
	// Progress, if set, receives one line per finished case (for long live runs).
	Progress io.Writer
	// RequireFullClaim fails a run that would pass with a partial claim (a case not
	// applicable for want of a harness capability): an author who means to make the full
	// ADR-0093 claim sets it, so that a missing capability cannot pass unnoticed.
	RequireFullClaim bool

	// nested marks the runs made by the accuracy table itself, which must not recurse.
	nested bool
	// setUpDelay is the first pause between set-up tries (setUpFirstDelay); tests shorten it.
	setUpDelay time.Duration
	// disabledCheck names one check to skip; only the mutation test sets it, to prove that
	// every check is needed by some accuracy-table row.
	disabledCheck string
}

func (o Options) withDefaults() Options {
	if o.CaseTimeout <= 0 {
		o.CaseTimeout = DefaultCaseTimeout
	}
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.setUpDelay <= 0 {
		o.setUpDelay = setUpFirstDelay
	}
	return o
}

// Execute runs the whole matrix against h and returns the report. It never panics and
// never outlives ctx by more than the time a harness call takes to honor cancellation:
// each case runs in its own goroutine under its own timeout, and a case that panics or
// hangs is reported as Failed while the run continues with the next case. Execute does not
// Close the harness; the caller owns it.
func Execute(ctx context.Context, h Harness, opts Options) *Report {
	opts = opts.withDefaults()
	start := time.Now()
	r := &Report{SuiteVersion: SuiteVersion, AdapterVersion: opts.AdapterVersion, StartTime: start.UTC()}
	defer func() {
		r.DurationMillis = time.Since(start).Milliseconds()
		r.finish()
		if opts.RequireFullClaim && r.Result == Passed && r.Claim != ClaimFull {
			r.Error = "the full claim was required, but the run's claim is partial: " + r.Summary()
			r.finish()
		}
	}()
	if h == nil {
		r.Error = "no harness"
		return r
	}

	if v, ok := h.(AdapterVersioner); ok {
		vctx, cancel := context.WithTimeout(ctx, opts.CaseTimeout)
		av, err := callString(vctx, func(c context.Context) (string, error) { return v.AdapterVersion(c) })
		cancel()
		if err != nil {
			r.Error = "harness could not report the adapter version: " + err.Error()
			return r
		}
		r.AdapterVersion = av
	}
	matrix := cases
	if w, ok := h.(WireTarget); ok {
		r.Target = w.TargetURL()
		matrix = append(slices.Clone(cases), wireCases...)
	}
	if v, ok := h.(ServiceVersioner); ok {
		vctx, cancel := context.WithTimeout(ctx, opts.CaseTimeout)
		sv, err := callString(vctx, func(c context.Context) (string, error) { return v.ServiceVersion(c) })
		cancel()
		if err != nil {
			r.Error = "harness could not report the service version: " + err.Error()
			return r
		}
		r.ServiceVersion = sv
	}

	// A probe store gives the report its manifest and tells the cases whether the manifest
	// is usable at all: every case judges behavior against it.
	pctx, cancel := context.WithTimeout(ctx, opts.CaseTimeout)
	m, err := probeManifest(pctx, h, opts)
	cancel()
	if err != nil {
		r.Error = err.Error()
		for _, c := range matrix {
			r.Cases = append(r.Cases, CaseResult{ID: c.ID, Outcome: Failed, Hint: c.Hint,
				Message: "not run: " + err.Error()})
		}
		return r
	}
	r.Manifest = &m
	r.AdapterID = m.Adapter
	r.ManifestHash = m.Hash()
	manifestErr := m.Validate()

	for _, c := range matrix {
		var res CaseResult
		switch {
		case ctx.Err() != nil:
			res = CaseResult{ID: c.ID, Outcome: Failed, Message: "not run: the run's context ended: " + ctx.Err().Error()}
		case manifestErr != nil && c.ID != CaseStructuralSurface:
			res = CaseResult{ID: c.ID, Outcome: Failed, Message: "not run: the manifest does not validate (see structural-surface): " + manifestErr.Error()}
		case c.ID == CaseManifestAccuracy && opts.nested:
			res = CaseResult{ID: c.ID, Outcome: NotApplicable, Message: "nested run inside the manifest-accuracy table"}
		default:
			res = runCase(ctx, h, c, opts)
		}
		res.ID = c.ID
		res.Message = truncateString(res.Message, maxMessageBytes)
		if res.Outcome == Failed {
			res.Hint = c.Hint
		}
		r.Cases = append(r.Cases, res)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "%-20s %-13s %s\n", res.ID, res.Outcome, truncateString(oneLine(res.Message), 160))
		}
	}
	if manifestErr == nil {
		r.Profiles = runProfiles(ctx, h, m, opts)
	}
	if ctx.Err() == nil && opts.disabledCheck != checkVersionsHeld {
		if drift := versionDrift(ctx, h, r, opts); drift != "" {
			r.Error = drift
		}
	}
	return r
}

// checkVersionsHeld names the run-level check that the versions read at the start still hold
// at the end; the over-the-wire table's mutation test disables it by this name.
const checkVersionsHeld = "run/versions-held"

// versionDrift reads the service and adapter versions again after the last case and says how
// they moved, or "" when they did not: a run verifies the versions it started with only if
// they held throughout, and a target that changed (an upgrade mid-run) while still calling
// its manifest valid would otherwise pass under the old names.
func versionDrift(ctx context.Context, h Harness, r *Report, opts Options) string {
	read := func(f func(context.Context) (string, error)) (string, error) {
		vctx, cancel := context.WithTimeout(ctx, opts.CaseTimeout)
		defer cancel()
		return callString(vctx, f)
	}
	var moved []string
	if v, ok := h.(ServiceVersioner); ok {
		sv, err := read(v.ServiceVersion)
		switch {
		case err != nil:
			return "the service version could not be read again after the run: " + err.Error()
		case sv != r.ServiceVersion:
			moved = append(moved, fmt.Sprintf("service version %q at the start, %q at the end", truncateString(r.ServiceVersion, 128), truncateString(sv, 128)))
		}
	}
	if v, ok := h.(AdapterVersioner); ok {
		av, err := read(v.AdapterVersion)
		switch {
		case err != nil:
			return "the adapter version could not be read again after the run: " + err.Error()
		case av != r.AdapterVersion:
			moved = append(moved, fmt.Sprintf("adapter version %q at the start, %q at the end", truncateString(r.AdapterVersion, 128), truncateString(av, 128)))
		}
	}
	if len(moved) == 0 {
		return ""
	}
	return "the target changed during the run (" + strings.Join(moved, "; ") + "): the cases verified no single version"
}

// callString runs f in a goroutine so that a harness ignoring its context cannot hang the run.
func callString(ctx context.Context, f func(context.Context) (string, error)) (s string, err error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		s, err := f(ctx)
		ch <- result{s, err}
	}()
	select {
	case res := <-ch:
		return res.s, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func probeManifest(ctx context.Context, h Harness, opts Options) (memory.Manifest, error) {
	type result struct {
		m   memory.Manifest
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: fmt.Errorf("harness panicked while making a probe store: %v", p)}
			}
		}()
		// Without a reset capability (a target without harness mode) the probe still reads
		// the manifest; the cases that need the reset say so one by one.
		if _, err := retryUnavailable(ctx, opts.setUpDelay, func() error { return h.Reset(ctx) }); err != nil {
			if _, missing := missingCapability(err); !missing {
				ch <- result{err: fmt.Errorf("harness Reset failed: %w", err)}
				return
			}
		}
		var s memory.ExternalStore
		_, err := retryUnavailable(ctx, opts.setUpDelay, func() (err error) { s, err = h.MakeStore(ctx); return err })
		if err != nil {
			ch <- result{err: fmt.Errorf("harness MakeStore failed: %w", err)}
			return
		}
		if s == nil {
			ch <- result{err: errors.New("harness MakeStore returned a nil store")}
			return
		}
		m := s.Manifest()
		closeStore(s)
		ch <- result{m: m}
	}()
	select {
	case res := <-ch:
		return res.m, res.err
	case <-ctx.Done():
		return memory.Manifest{}, fmt.Errorf("making a probe store: %w", ctx.Err())
	}
}

// setUpAttempts bounds the tries of a case's set-up (Reset, MakeStore) while the harness
// answers MemoryAdapterUnavailable. Set-up is the harness reaching the service, not a check of
// the adapter: a live run on a loaded node can see one connect time out, and counting that as
// a failed case would mark a conforming adapter ConformanceFailed until the next run. The
// checks themselves are never retried, and a service that stays unavailable still fails the
// case (or, at the probe, the whole run) after these tries.
const setUpAttempts = 5

// setUpFirstDelay is the pause after the first unavailable try; it doubles after each, so
// the tries span about three seconds, well inside a case's timeout.
const setUpFirstDelay = 200 * time.Millisecond

// retryUnavailable calls fn until it returns nil or an error other than
// memory.ErrUnavailable, setUpAttempts tries were made, or ctx ends. It returns how many
// tries failed before the last one, and the last one's error.
func retryUnavailable(ctx context.Context, delay time.Duration, fn func() error) (int, error) {
	for try := 1; ; try++ {
		err := fn()
		if err == nil || !errors.Is(err, memory.ErrUnavailable) || try == setUpAttempts {
			return try - 1, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return try - 1, err
		case <-t.C:
		}
		delay *= 2
	}
}

// closeStore closes a store that has a Close method; stores are per case.
func closeStore(s memory.ExternalStore) {
	switch c := s.(type) {
	case interface{ Close() error }:
		_ = c.Close()
	case interface{ Close(context.Context) error }:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Close(ctx)
		cancel()
	}
}

// abort is the panic value of caseRun.fatalf: it ends a case early without being a crash.
type abort struct{}

// runCase runs one case: Reset, MakeStore and the checks, in a goroutine under the case
// timeout, converting panics and timeouts into Failed.
func runCase(parent context.Context, h Harness, c Case, opts Options) CaseResult {
	if opts.Accuracy == nil {
		// Defaulted here rather than in the case, so that the matrix (which the table runs)
		// does not refer to the table through its own initializer.
		opts.Accuracy = RunAccuracyTable
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, opts.CaseTimeout)
	defer cancel()
	ch := make(chan CaseResult, 1)
	go func() {
		cr := &caseRun{ctx: ctx, h: h, opts: opts, wire: c.wire}
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(abort); !ok {
					cr.problems = append(cr.problems, fmt.Sprintf("case panicked: %v (%s)", p, firstFrames(debug.Stack())))
				}
			}
			if cr.store != nil {
				closeStore(cr.store)
			}
			ch <- cr.result()
		}()
		if !c.readOnly {
			retries, err := retryUnavailable(ctx, opts.setUpDelay, func() error { return h.Reset(ctx) })
			if err != nil {
				cr.harnessFailed("Reset", err)
			}
			cr.noteSetUpRetries("Reset", retries)
		}
		var s memory.ExternalStore
		retries, err := retryUnavailable(ctx, opts.setUpDelay, func() (err error) { s, err = h.MakeStore(ctx); return err })
		if err != nil {
			cr.fatalf("harness MakeStore failed: %v", err)
		}
		cr.noteSetUpRetries("MakeStore", retries)
		if s == nil {
			cr.fatalf("harness MakeStore returned a nil store")
		}
		cr.store = s
		cr.m = s.Manifest()
		c.run(cr)
	}()
	var res CaseResult
	select {
	case res = <-ch:
	case <-ctx.Done():
		// The case goroutine may still be blocked in a harness or adapter call that ignores
		// its context; it is abandoned (it will see a canceled context) and the run moves on.
		if parent.Err() != nil {
			res = CaseResult{Outcome: Failed, Message: "the run's context ended during the case: " + parent.Err().Error()}
		} else {
			res = CaseResult{Outcome: Failed, Message: fmt.Sprintf("case timed out after %s", opts.CaseTimeout)}
		}
	}
	res.DurationMillis = time.Since(start).Milliseconds()
	return res
}

// firstFrames keeps a panic's stack short enough for a report message.
func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	var out []string
	for i, l := range lines {
		// Skip the goroutine header and the runtime/debug and panic frames.
		if i == 0 || strings.Contains(l, "runtime/debug") || strings.Contains(l, "runtime/panic") {
			continue
		}
		if strings.HasPrefix(l, "\t") {
			out = append(out, strings.TrimSpace(l))
		}
		if len(out) == 3 {
			break
		}
	}
	return strings.Join(out, " <- ")
}

// Run executes the matrix from go test: one subtest per case id, failing the subtests whose
// case Failed and skipping, with the reason, those NotApplicable, so that `go test -v` shows
// a SKIP line for every case the run did not prove (Options.RequireFullClaim fails them). A run that did not complete (no store, a
// case that never executed) also fails the parent test. It returns the report.
func Run(t *testing.T, h Harness, opts ...Options) *Report {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r := Execute(t.Context(), h, o)
	if r.Error != "" {
		t.Errorf("conformance run failed: %s", r.Error)
	}
	for _, c := range r.Cases {
		t.Run(string(c.ID), func(t *testing.T) {
			switch c.Outcome {
			case Passed:
				t.Logf("passed: %s", c.Message)
			case NotApplicable:
				if o.RequireFullClaim {
					t.Errorf("not applicable, and the full claim was required: %s", c.Message)
					return
				}
				t.Skipf("not applicable: %s", c.Message)
			default:
				t.Errorf("%s: %s\nhint: %s", c.Outcome, c.Message, c.Hint)
			}
		})
	}
	for _, p := range r.Profiles {
		t.Run("profile-"+string(p.ID), func(t *testing.T) {
			switch {
			case p.Outcome == Passed:
				t.Logf("passed: %s", p.Message)
			case p.Outcome == NotApplicable && len(p.MissingCapabilities) > 0 && o.RequireFullClaim:
				t.Errorf("claimed but not applicable, and the full claim was required: %s", p.Message)
			case p.Outcome == NotApplicable:
				// A profile the manifest does not claim is not a gap in the run's proof.
				t.Logf("not applicable: %s", p.Message)
			default:
				t.Errorf("%s: %s\nhint: %s", p.Outcome, p.Message, p.Hint)
			}
		})
	}
	if r.Result != Passed {
		t.Errorf("conformance result %s for adapter %q\n%s", r.Result, r.AdapterID, r.Table())
	}
	return r
}
