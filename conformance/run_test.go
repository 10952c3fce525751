package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance/fake"
)

// cachedAccuracy runs the built-in table once per test binary; the per-configuration runs
// below reuse its summary so that the table is not repeated for every configuration.
var cachedAccuracy = sync.OnceValues(func() (AccuracySummary, error) {
	return RunAccuracyTable(context.Background())
})

func fastOptions() Options {
	return Options{
		CaseTimeout:       10 * time.Second,
		VisibilityTimeout: 50 * time.Millisecond,
		PollInterval:      time.Millisecond,
		Accuracy:          func(context.Context) (AccuracySummary, error) { return cachedAccuracy() },
	}
}

// TestRunFakeDefault runs the suite from go test exactly as an adapter author would, with
// the built-in accuracy table, against the faithful fake.
func TestRunFakeDefault(t *testing.T) {
	h := fake.New(fake.Config{})
	r := Run(t, h)
	if r.Result != Passed || r.Counts.Passed != len(cases) {
		t.Fatalf("want all %d cases passed, got %+v", len(cases), r.Counts)
	}
	if r.ServiceVersion != fake.ServiceVersion || r.AdapterID != fake.AdapterID || r.ManifestHash != h.Manifest().Hash() {
		t.Errorf("report identity: service %q adapter %q hash %q", r.ServiceVersion, r.AdapterID, r.ManifestHash)
	}
	acc, _ := r.Case(CaseManifestAccuracy)
	pairs, _ := AccuracyPairs()
	if want := fmt.Sprintf("caught %d of %d", pairs, pairs); !strings.Contains(acc.Message, want) {
		t.Errorf("manifest-accuracy message %q does not report %q", acc.Message, want)
	}
}

// TestFakeKnobCombinations runs the suite against the fake for every service knob on its
// own and for combinations, each with its truthful manifest: every one must pass.
func TestFakeKnobCombinations(t *testing.T) {
	all := fake.ServiceKnobs{EventualIndex: true, DropSearchTags: true, AlterMetadata: true, SearchDropsMetadata: true,
		NormalizeTimestamps: true, DropCreatedAt: true, FilterableKeys: []string{"branch_id"}, MidCallOutage: true}
	tests := []struct {
		name    string
		svc     fake.ServiceKnobs
		adapter fake.AdapterKnobs
		wantNA  []CaseID
	}{
		{name: "faithful"},
		{name: "eventual index", svc: fake.ServiceKnobs{EventualIndex: true}},
		{name: "tags dropped from hits", svc: fake.ServiceKnobs{DropSearchTags: true}},
		{name: "metadata dropped", svc: fake.ServiceKnobs{DropMetadata: true}, wantNA: []CaseID{CaseSupportedFilter}},
		{name: "metadata altered", svc: fake.ServiceKnobs{AlterMetadata: true}},
		{name: "metadata dropped from hits", svc: fake.ServiceKnobs{SearchDropsMetadata: true}},
		{name: "timestamps normalised", svc: fake.ServiceKnobs{NormalizeTimestamps: true}},
		{name: "created_at dropped", svc: fake.ServiceKnobs{DropCreatedAt: true}},
		{name: "closed filter set", svc: fake.ServiceKnobs{FilterableKeys: []string{"source"}}},
		{name: "no filterable keys", svc: fake.ServiceKnobs{FilterableKeys: []string{}}, wantNA: []CaseID{CaseSupportedFilter}},
		{name: "mid-call outage", svc: fake.ServiceKnobs{MidCallOutage: true}},
		{name: "adapter rejects metadata", adapter: fake.AdapterKnobs{RejectMetadata: true}, wantNA: []CaseID{CaseSupportedFilter}},
		{name: "eventual, tags and metadata dropped", svc: fake.ServiceKnobs{EventualIndex: true, DropSearchTags: true, DropMetadata: true}, wantNA: []CaseID{CaseSupportedFilter}},
		{name: "every service knob but metadata dropping", svc: all},
		{name: "every service knob", svc: func() fake.ServiceKnobs { k := all; k.DropMetadata = true; return k }(), wantNA: []CaseID{CaseSupportedFilter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := fake.New(fake.Config{Service: tc.svc, Adapter: tc.adapter})
			r := Execute(t.Context(), h, fastOptions())
			if r.Result != Passed {
				t.Fatalf("manifest %s\n%s", mustJSON(t, h.Manifest()), r.Table())
			}
			var na []CaseID
			for _, c := range r.Cases {
				if c.Outcome == NotApplicable {
					na = append(na, c.ID)
				}
			}
			if !slices.Equal(na, tc.wantNA) {
				t.Errorf("not applicable %v, want %v", na, tc.wantNA)
			}
		})
	}
}

// TestTruthfulManifestAlwaysValidates checks the fake's manifest derivation over every
// combination of its boolean service knobs.
func TestTruthfulManifestAlwaysValidates(t *testing.T) {
	for bits := range 1 << 7 {
		k := fake.ServiceKnobs{
			EventualIndex: bits&1 != 0, DropSearchTags: bits&2 != 0, DropMetadata: bits&4 != 0, AlterMetadata: bits&8 != 0,
			SearchDropsMetadata: bits&16 != 0, NormalizeTimestamps: bits&32 != 0, DropCreatedAt: bits&64 != 0,
		}
		if err := fake.TruthfulManifest(k, fake.AdapterKnobs{}).Validate(); err != nil {
			t.Errorf("knobs %+v: truthful manifest does not validate: %v", k, err)
		}
	}
}

func TestEventualConsistencyObservesMiss(t *testing.T) {
	r := Execute(t.Context(), fake.New(fake.Config{Service: fake.ServiceKnobs{EventualIndex: true}}), fastOptions())
	c, _ := r.Case(CaseConsistency)
	if c.Outcome != Passed || !strings.Contains(c.Message, "missed before index visibility: true") {
		t.Fatalf("consistency on an eventual index: %+v", c)
	}
}

// minimalHarness hides every optional capability of the harness it wraps.
type minimalHarness struct{ Harness }

func TestWithoutOptionalCapabilities(t *testing.T) {
	r := Execute(t.Context(), minimalHarness{fake.New(fake.Config{})}, fastOptions())
	if r.Result != Passed {
		t.Fatalf("\n%s", r.Table())
	}
	for id, want := range map[CaseID]string{
		CaseWrongNativeKind:   "WrongKindMaker",
		CaseRejectedWrite:     "WriteRejecter",
		CaseLimit:             "TransportObserver",
		CaseUnsupportedFilter: "TransportObserver",
		CaseSupportedFilter:   "FilterRecorder",
		CaseTypedSearch:       "MalformedResponder",
		CaseStoreIdentifier:   "IdentitylessWriter",
	} {
		c, _ := r.Case(id)
		if !strings.Contains(c.Message, want) {
			t.Errorf("%s: message %q does not say that %s is missing", id, c.Message, want)
		}
	}
	for _, id := range []CaseID{CaseWrongNativeKind, CaseRejectedWrite} {
		if c, _ := r.Case(id); c.Outcome != NotApplicable {
			t.Errorf("%s: outcome %s, want NotApplicable", id, c.Outcome)
		}
	}
	// Passed, but not the full claim: the report names every capability the run lacked.
	want := []string{"backend_calls", "identityless_write", "responses_malformed", "write_rejected", "wrong_kind_record"}
	if r.Claim != ClaimPartial || !slices.Equal(r.MissingCapabilities, want) || r.FullClaim() {
		t.Errorf("claim %q missing %v (full %t), want partial %v", r.Claim, r.MissingCapabilities, r.FullClaim(), want)
	}
	if !strings.Contains(r.Summary(), "partial claim") {
		t.Errorf("summary %q does not say partial claim", r.Summary())
	}
	full := Execute(t.Context(), fake.New(fake.Config{}), fastOptions())
	if !full.FullClaim() || full.Claim != ClaimFull || len(full.MissingCapabilities) != 0 {
		t.Errorf("a run with every capability: claim %q missing %v, want full", full.Claim, full.MissingCapabilities)
	}
	if r.ServiceVersion != "" {
		t.Errorf("service version %q from a harness without ServiceVersioner", r.ServiceVersion)
	}
}

// hookHarness wraps a harness so that its stores run hooks before each call.
type hookHarness struct {
	*fake.Harness
	onRetrieve func()
	onSearch   func(q memory.Query)
}

type hookStore struct {
	memory.ExternalStore
	h *hookHarness
}

func (h *hookHarness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	s, err := h.Harness.MakeStore(ctx)
	if err != nil {
		return nil, err
	}
	return hookStore{s, h}, nil
}

func (s hookStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if s.h.onRetrieve != nil {
		s.h.onRetrieve()
	}
	return s.ExternalStore.Retrieve(ctx, id)
}

func (s hookStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if s.h.onSearch != nil {
		s.h.onSearch(q)
	}
	return s.ExternalStore.Search(ctx, q)
}

func TestPanickingAndHangingCasesFailAndRunContinues(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := &hookHarness{
		Harness:    fake.New(fake.Config{}),
		onRetrieve: func() { panic("adapter exploded") },
		onSearch: func(q memory.Query) {
			if q.Limit == 5 { // only the limit case asks for 5
				<-release // hangs, ignoring its context
			}
		},
	}
	opts := fastOptions()
	opts.CaseTimeout = 300 * time.Millisecond
	// The accuracy table takes longer than this case timeout when it first runs: run it
	// before, so the spec does not depend on an earlier test having done so.
	if _, err := cachedAccuracy(); err != nil {
		t.Fatal(err)
	}
	r := Execute(t.Context(), h, opts)
	dr, _ := r.Case(CaseDirectRetrieval)
	if dr.Outcome != Failed || !strings.Contains(dr.Message, "panicked: adapter exploded") {
		t.Errorf("direct-retrieval: %+v, want Failed with the panic", dr)
	}
	lim, _ := r.Case(CaseLimit)
	if lim.Outcome != Failed || !strings.Contains(lim.Message, "timed out after 300ms") {
		t.Errorf("limit: %+v, want Failed with the timeout", lim)
	}
	for _, id := range []CaseID{CaseEmptyQuery, CaseUnsupportedFilter, CaseConsistency, CaseRejectedWrite, CaseManifestAccuracy} {
		if c, _ := r.Case(id); c.Outcome != Passed {
			t.Errorf("%s after the panic and the hang: %s %s, want Passed", id, c.Outcome, c.Message)
		}
	}
	if r.Result != Failed || len(r.Cases) != len(cases) {
		t.Errorf("result %s with %d cases, want Failed with %d", r.Result, len(r.Cases), len(cases))
	}
}

type failingHarness struct{ Harness }

func (failingHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	return nil, errors.New("no service")
}

func TestHarnessWithoutStoreFailsRun(t *testing.T) {
	r := Execute(t.Context(), failingHarness{fake.New(fake.Config{})}, fastOptions())
	if r.Result != Failed || !strings.Contains(r.Error, "no service") || r.Counts.Failed != len(cases) {
		t.Fatalf("%+v", r)
	}
}

func TestCancelledContextFailsRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := Execute(ctx, fake.New(fake.Config{}), fastOptions())
	if r.Result != Failed || r.Counts.Passed != 0 {
		t.Fatalf("canceled run: result %s, counts %+v", r.Result, r.Counts)
	}
}

func TestIncompleteReportIsNotPassed(t *testing.T) {
	r := Execute(t.Context(), fake.New(fake.Config{}), fastOptions())
	if r.Result != Passed {
		t.Fatalf("\n%s", r.Table())
	}
	r.Cases = r.Cases[:len(r.Cases)-1]
	r.finish()
	if r.Result != Failed {
		t.Errorf("a report missing a case is %s, want Failed", r.Result)
	}
}

func TestManifestAccuracyCaseFailsOnMissedLie(t *testing.T) {
	for name, acc := range map[string]func(context.Context) (AccuracySummary, error){
		"missed lie": func(context.Context) (AccuracySummary, error) {
			return AccuracySummary{Caught: 3, Total: 4, TruthfulPassed: 1, Truthful: 1}, nil
		},
		"empty table":  func(context.Context) (AccuracySummary, error) { return AccuracySummary{}, nil },
		"table failed": func(context.Context) (AccuracySummary, error) { return AccuracySummary{}, errors.New("boom") },
		"truthful fail": func(context.Context) (AccuracySummary, error) {
			return AccuracySummary{Caught: 4, Total: 4, TruthfulPassed: 0, Truthful: 1}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			opts := fastOptions()
			opts.Accuracy = acc
			r := Execute(t.Context(), fake.New(fake.Config{}), opts)
			if c, _ := r.Case(CaseManifestAccuracy); c.Outcome != Failed {
				t.Errorf("manifest-accuracy %s: %s", c.Outcome, c.Message)
			}
		})
	}
}

func TestCasesList(t *testing.T) {
	want := []CaseID{"structural-surface", "store-identifier", "direct-retrieval", "unknown-id", "wrong-native-kind",
		"dropped-write-field", "typed-search", "limit", "empty-query", "unsupported-filter", "supported-filter",
		"tag-projection", "metadata-projection", "consistency", "transport-outage", "rejected-write", "manifest-accuracy"}
	if got := CaseIDs(); !slices.Equal(got, want) {
		t.Fatalf("case ids %v, want %v", got, want)
	}
	for _, c := range Cases() {
		if c.Title == "" || c.Description == "" || c.Hint == "" || c.run == nil {
			t.Errorf("case %s lacks a title, description, hint or implementation", c.ID)
		}
		if strings.Contains(c.Description, "\n") {
			t.Errorf("case %s: description must be one line", c.ID)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeDocumentsEveryCase(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Cases() {
		if !strings.Contains(string(b), "| `"+string(c.ID)+"` |") {
			t.Errorf("README.md has no row for case %s", c.ID)
		}
	}
}

// TestGoTestShowsWhatARunDidNotProve runs this test binary again on a harness that lacks
// capabilities: `go test -v` must show a SKIP line, with its reason, for each case the run
// did not prove, and with RequireFullClaim the same run must fail.
func TestGoTestShowsWhatARunDidNotProve(t *testing.T) {
	for _, mode := range []string{"partial", "full"} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPartialClaimHelper$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), partialHelperEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		skip := "--- SKIP: TestPartialClaimHelper/" + string(CaseWrongNativeKind)
		fail := "--- FAIL: TestPartialClaimHelper/" + string(CaseWrongNativeKind)
		switch {
		case mode == "partial" && (err != nil || !strings.Contains(string(out), skip) || !strings.Contains(string(out), "WrongKindMaker")):
			t.Errorf("a partial claim: %v, want a pass with %q naming WrongKindMaker:\n%s", err, skip, out)
		case mode == "full" && (err == nil || !strings.Contains(string(out), fail) || !strings.Contains(string(out), "the full claim was required")):
			t.Errorf("a partial claim under RequireFullClaim: %v, want a failure with %q:\n%s", err, fail, out)
		}
	}
}

// partialHelperEnv makes TestPartialClaimHelper run; TestGoTestShowsWhatARunDidNotProve sets it.
const partialHelperEnv = "MAO_CONFORMANCE_PARTIAL_CLAIM_HELPER"

// TestPartialClaimHelper is the process TestGoTestShowsWhatARunDidNotProve starts, an
// adapter author's `conformance.Run` on a harness without optional capabilities; run in the
// ordinary way it has nothing to do and returns.
func TestPartialClaimHelper(t *testing.T) {
	mode := os.Getenv(partialHelperEnv)
	if mode == "" {
		return
	}
	opts := fastOptions()
	opts.RequireFullClaim = mode == "full"
	Run(t, minimalHarness{fake.New(fake.Config{})}, opts)
}

// The adapter packages' own tests run the suite against each backend (adapters/inmemory is
// the reference); this module's tests stay on its fake so that the contract module needs no
// adapter, and so no Kubernetes module, to test itself.
func TestProgressHasOneLinePerCaseAndProfile(t *testing.T) {
	var progress strings.Builder
	opts := fastOptions()
	opts.Progress = &progress
	r := Execute(t.Context(), fake.New(fake.Config{}), opts)
	if r.Result != Passed {
		t.Fatalf("fake: %+v\n%s", r.Counts, r.Table())
	}
	if lines := strings.Count(progress.String(), "\n"); lines != len(cases)+len(profiles) {
		t.Errorf("progress has %d lines, want one per case and profile:\n%s", lines, progress.String())
	}
}

// blipHarness answers MakeStore with MemoryAdapterUnavailable on the calls it names (1 is
// the probe's), the way a live harness sees a connect time out on a loaded node.
type blipHarness struct {
	*fake.Harness
	mu          sync.Mutex
	calls       int
	unavailable func(call int) bool
}

func (h *blipHarness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	h.calls++
	down := h.unavailable(h.calls)
	h.mu.Unlock()
	if down {
		return nil, fmt.Errorf("probe version: %w", memory.ErrUnavailable)
	}
	return h.Harness.MakeStore(ctx)
}

func (h *blipHarness) callCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func TestSetUpRetriesAnUnavailableService(t *testing.T) {
	opts := fastOptions()
	opts.setUpDelay = time.Millisecond

	t.Run("a blip in a case's set-up is retried and noted", func(t *testing.T) {
		// Calls 2 and 3 are the first case's first two tries.
		h := &blipHarness{Harness: fake.New(fake.Config{}), unavailable: func(n int) bool { return n == 2 || n == 3 }}
		r := Execute(t.Context(), h, opts)
		if r.Result != Passed {
			t.Fatalf("a run with a two-try blip: %s\n%s", r.Result, r.Table())
		}
		first := r.Cases[0]
		if !strings.Contains(first.Message, "harness MakeStore answered MemoryAdapterUnavailable 2 time(s) before it succeeded") {
			t.Errorf("%s message %q does not note the retries", first.ID, first.Message)
		}
	})

	t.Run("a service that stays unavailable fails the case after the bounded tries", func(t *testing.T) {
		h := &blipHarness{Harness: fake.New(fake.Config{}), unavailable: func(n int) bool { return n >= 2 && n < 2+setUpAttempts }}
		r := Execute(t.Context(), h, opts)
		first := r.Cases[0]
		if first.Outcome != Failed || !strings.Contains(first.Message, "harness MakeStore failed: probe version: memory adapter unavailable") {
			t.Errorf("%s: %s %q, want Failed naming the unavailable set-up", first.ID, first.Outcome, first.Message)
		}
		if second := r.Cases[1]; second.Outcome != Passed {
			t.Errorf("%s after the outage: %s %q, want Passed", second.ID, second.Outcome, second.Message)
		}
	})

	t.Run("an unavailable probe aborts the run after the bounded tries", func(t *testing.T) {
		h := &blipHarness{Harness: fake.New(fake.Config{}), unavailable: func(int) bool { return true }}
		r := Execute(t.Context(), h, opts)
		if r.Result != Failed || !strings.Contains(r.Error, "memory adapter unavailable") || h.callCount() != setUpAttempts {
			t.Errorf("result %s, error %q after %d MakeStore calls, want Failed after %d", r.Result, r.Error, h.callCount(), setUpAttempts)
		}
	})

	t.Run("any other set-up error is not retried", func(t *testing.T) {
		calls := 0
		_, err := retryUnavailable(t.Context(), time.Millisecond, func() error { calls++; return errors.New("no service") })
		if err == nil || calls != 1 {
			t.Errorf("a non-availability error was tried %d times (err %v), want once", calls, err)
		}
	})
}
