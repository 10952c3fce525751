package conformance

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance/wire"
	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
)

// Compile-time proof that the wire harness offers every capability the suite knows.
var (
	_ Harness            = (*wire.Harness)(nil)
	_ WireTarget         = (*wire.Harness)(nil)
	_ CapabilityReporter = (*wire.Harness)(nil)
	_ BackendCallCounter = (*wire.Harness)(nil)
	_ AdapterVersioner   = (*wire.Harness)(nil)
	_ ServiceVersioner   = (*wire.Harness)(nil)
	_ WrongKindMaker     = (*wire.Harness)(nil)
	_ WriteRejecter      = (*wire.Harness)(nil)
	_ MalformedResponder = (*wire.Harness)(nil)
	_ IdentitylessWriter = (*wire.Harness)(nil)
)

// wireLie is one row of the over-the-wire accuracy table: the Python example server with
// one planted lie (examples/python-adapter/server.py, LIES) and the case meant to catch it;
// no case (the empty id) means the run-level check that the versions held.
type wireLie struct {
	Lie   string
	Meant CaseID
}

var wireLies = []wireLie{
	{"nested-metadata-dropped", CaseMetadataProjection},
	{"created-at-seconds", CaseDirectRetrieval},
	{"tags-deduplicated", CaseTagProjection},
	{"filter-ignored", CaseSupportedFilter},
	{"empty-on-outage", CaseTransportOutage},
	{"limit-ignored", CaseLimit},
	{"different-id", CaseStoreIdentifier},
	{"retrieve-via-text", CaseUnknownID},
	{"unsupported-filter-ignored", CaseUnsupportedFilter},
	{"first-rejected-key-only", CaseUnsupportedFilter},
	{"unsorted-rejected-keys", CaseUnsupportedFilter},
	{"negative-limit-accepted", CaseLimit},
	{"negative-limit-generic-error", CaseLimit},
	{"negative-limit-after-backend", CaseLimit},
	{"unsupported-after-backend", CaseUnsupportedFilter},
	{"limit-zero-items", CaseLimit},
	{"limit-zero-backend-call", CaseLimit},
	{"manifest-changes", CaseManifestStable},
	{"wrong-manifest-hash", CaseManifestStable},
	{"no-token-check", CaseAuthentication},
	{"string-content-truncated", CaseContentKinds},
	{"duplicate-id-differs", CaseDuplicateID},
	{"version-drift", ""},
	{"malformed-answered-200", CaseTypedSearch},
	{"rejected-write-400", CaseRejectedWrite},
}

// serverRuleChecks are the checks of the matrix that, run through the raw wire client,
// judge rules only the server applies (the client adds none); with the wire-rule cases'
// own checks they are what TestEveryWireCheckIsNeeded mutates.
var serverRuleChecks = []string{
	"unsupported-filter/rejected-keys", "unsupported-filter/no-transport",
	"limit/zero-empty", "limit/zero-no-transport", "limit/negative-rejected", "limit/negative-no-transport",
}

// runWire runs the matrix and the wire-rule cases against a fresh Python server.
func runWire(t *testing.T, lie string, opts Options) *Report {
	t.Helper()
	py := wiretest.StartPython(t, lie)
	ctx := t.Context()
	h, err := wire.New(ctx, wire.Options{TargetURL: py.URL, Token: py.Token, HarnessURL: py.HarnessURL, HarnessToken: py.HarnessToken})
	if err != nil {
		t.Fatalf("wire harness: %v", err)
	}
	defer func() { _ = h.Close(context.Background()) }()
	return Execute(ctx, h, opts)
}

var wireTable struct {
	once     sync.Once
	truthful *Report
	lies     []*Report
}

// wireTableReports runs the truthful server and every lie once per test binary.
func wireTableReports(t *testing.T) (*Report, []*Report) {
	wireTable.once.Do(func() {
		wireTable.truthful = runWire(t, "", nestedOptions(""))
		for _, l := range wireLies {
			wireTable.lies = append(wireTable.lies, runWire(t, l.Lie, nestedOptions("")))
		}
	})
	if wireTable.truthful == nil || len(wireTable.lies) != len(wireLies) {
		t.Fatal("the over-the-wire accuracy table did not run")
	}
	return wireTable.truthful, wireTable.lies
}

// TestWireAccuracyTable: the truthful Python server passes every case with the full claim,
// and each planted lie fails the case meant to catch it.
func TestWireAccuracyTable(t *testing.T) {
	truthful, lies := wireTableReports(t)
	if truthful.Result != Passed || truthful.Claim != ClaimFull || len(truthful.Cases) != len(cases)+len(wireCases) {
		t.Errorf("the truthful Python server: %s\n%s", truthful.Summary(), truthful.Table())
	}
	for i, l := range wireLies {
		r := lies[i]
		if l.Meant == "" {
			if r.Result != Failed || !strings.Contains(r.Error, "changed during the run") {
				t.Errorf("lie %s: the run is %s (%q), want Failed because the target changed during the run\n%s", l.Lie, r.Result, r.Error, r.Table())
				continue
			}
			t.Logf("lie %-30s caught by the run-level check: %s", l.Lie, r.Error)
			continue
		}
		c, _ := r.Case(l.Meant)
		if c.Outcome != Failed {
			t.Errorf("lie %s: %s is %s, want Failed\n%s", l.Lie, l.Meant, c.Outcome, r.Table())
			continue
		}
		t.Logf("lie %-30s caught by %s (failed: %v)", l.Lie, l.Meant, r.FailedIDs())
	}
}

// TestEveryWireCheckIsNeeded disables each wire-rule check in turn and requires that some
// row of the over-the-wire table then passes its meant case: a check no row depends on
// would be one the table cannot prove.
func TestEveryWireCheckIsNeeded(t *testing.T) {
	_, lies := wireTableReports(t)
	wireCheckRegistry.Lock()
	names := slices.Clone(serverRuleChecks)
	for n := range wireCheckRegistry.names {
		names = append(names, n)
	}
	wireCheckRegistry.Unlock()
	slices.Sort(names)
	if len(names) < len(serverRuleChecks)+5 {
		t.Fatalf("only %d wire-rule checks registered: %v", len(names), names)
	}
	for _, name := range names {
		var rows []int
		for i, l := range wireLies {
			if c, _ := lies[i].Case(l.Meant); slices.Contains(c.failedChecks, name) {
				rows = append(rows, i)
			}
		}
		escaped := ""
		for _, i := range rows {
			r := runWire(t, wireLies[i].Lie, nestedOptions(name))
			if c, _ := r.Case(wireLies[i].Meant); c.Outcome != Failed {
				escaped = wireLies[i].Lie
				break
			}
		}
		if escaped == "" {
			t.Errorf("disabling check %q lets no lie of the over-the-wire table pass its meant case", name)
			continue
		}
		t.Logf("disabling %-36s lets lie %s pass", name, escaped)
	}
}

// TestVersionDriftCheckIsNeeded: without the run-level check, the server that upgrades
// mid-run passes with the full claim under its old version, which is what the check exists
// to stop.
func TestVersionDriftCheckIsNeeded(t *testing.T) {
	r := runWire(t, "version-drift", nestedOptions(checkVersionsHeld))
	if r.Result != Passed {
		t.Fatalf("with the check disabled the drifting server fails anyway (%s), so the table cannot show the check is needed\n%s", r.Error, r.Table())
	}
}

// TestPythonExampleHashesTheVectors: the Python example computes manifest_hash from the
// written canonical form alone, and agrees with every known-answer vector.
func TestPythonExampleHashesTheVectors(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	vectors := filepath.Join(filepath.Dir(file), "..", "api", "memory", "testdata", "manifest_hash_vectors.json")
	out, err := exec.Command(wiretest.Interpreter(t), wiretest.ServerPath(), "--check-hash-vectors", vectors).CombinedOutput()
	if err != nil {
		t.Fatalf("the Python implementation disagrees with the vectors: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// wireGovernanceClaim is the Python example's governance/v1 claim in the over-the-wire
// profile rows: every profile claimed, each with limits one run exercises.
const wireGovernanceClaim = `{"read_only":true,"isolation":true,` +
	`"retention":{"max_age_seconds":3600,"max_items":5,"sweep_period_seconds":60},` +
	`"quota":{"max_items":60,"max_bytes":65536,"writes_per_second":50,"write_burst":20}}`

// The over-the-wire profile rows are profileLies (profiles_test.go): the Python example
// plants the same lies under the same names.

func runWireGoverned(t *testing.T, lie, disabled string) *Report {
	t.Helper()
	py := wiretest.StartPythonWith(t, lie, wiretest.PythonOptions{Governance: wireGovernanceClaim})
	ctx := t.Context()
	h, err := wire.New(ctx, wire.Options{TargetURL: py.URL, Token: py.Token, HarnessURL: py.HarnessURL, HarnessToken: py.HarnessToken})
	if err != nil {
		t.Fatalf("wire harness: %v", err)
	}
	defer func() { _ = h.Close(context.Background()) }()
	return Execute(ctx, h, nestedOptions(disabled))
}

// TestWireProfilesTable: the Python example claiming governance passes every profile over the
// wire with the full claim; each planted lie fails its profile, and one passes it once that
// profile's checks are removed.
func TestWireProfilesTable(t *testing.T) {
	truthful := runWireGoverned(t, "", "")
	if truthful.Result != Passed || truthful.Claim != ClaimFull {
		t.Fatalf("the truthful governed Python server: %s\n%s", truthful.Summary(), truthful.Table())
	}
	for _, id := range ProfileIDs() {
		if p, _ := truthful.Profile(id); p.Outcome != Passed {
			t.Errorf("profile %s is %s over the wire: %s", id, p.Outcome, p.Message)
		}
	}
	for _, l := range profileLies {
		r := runWireGoverned(t, l.lie, "")
		if p, _ := r.Profile(l.meant); p.Outcome != Failed {
			t.Errorf("lie %s: profile %s is %s, want Failed\n%s", l.lie, l.meant, p.Outcome, r.Table())
			continue
		}
		if l.lie == "quota-ignored" {
			// One row shows the profile's checks decide over the wire too; the in-process table
			// (TestEveryProfileCheckIsNeeded) shows it for every lie and check.
			off := runWireGoverned(t, l.lie, string(l.meant)+"/")
			if p, _ := off.Profile(l.meant); p.Outcome != Passed {
				t.Errorf("lie %s with profile %s's checks removed: %s (%s), want Passed", l.lie, l.meant, p.Outcome, p.Message)
			}
		}
	}
}
