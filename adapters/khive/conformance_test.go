package khive

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// buildFake compiles cmd/khivefake into the test's temporary directory.
func buildFake(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "khivefake")
	out, err := exec.Command("go", "build", "-o", bin, "./khivefake/cmd/khivefake").CombinedOutput()
	if err != nil {
		t.Fatalf("go build khivefake: %v\n%s", err, out)
	}
	return bin
}

func newFakeHarness(t *testing.T, o HarnessOptions) *FakeHarness {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	h, err := NewHarness(context.Background(), o)
	if err != nil {
		t.Fatalf("NewHarness: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("harness Close: %v", err)
		}
	})
	fh, ok := h.(*FakeHarness)
	if !ok {
		t.Fatalf("NewHarness over khivefake returned %T, want *FakeHarness", h)
	}
	return fh
}

// requireVerdict checks the report: every case Passed and observed everything, except
// supported-filter, NotApplicable because khive has no metadata filter (supported_filters
// is empty, docs/adapters/khive.md).
func requireVerdict(t *testing.T, r *conformance.Report) {
	t.Helper()
	for _, c := range r.Cases {
		if strings.Contains(c.Message, "not observable") {
			t.Errorf("case %s could not observe everything: %s", c.ID, c.Message)
		}
		switch {
		case c.ID == conformance.CaseSupportedFilter:
			if c.Outcome != conformance.NotApplicable {
				t.Errorf("supported-filter: %s (%s), want NotApplicable: no filter is supported", c.Outcome, c.Message)
			}
		case c.Outcome != conformance.Passed:
			t.Errorf("case %s: %s (%s)", c.ID, c.Outcome, c.Message)
		}
	}
}

// TestConformanceInProcess runs the full matrix against the fake served through pipes.
func TestConformanceInProcess(t *testing.T) {
	h := newFakeHarness(t, HarnessOptions{InProcess: true})
	requireVerdict(t, conformance.Run(t, h))
}

// TestConformanceChildProcess runs the full matrix against the fake as a child process,
// the way the adapter runs kkernel.
func TestConformanceChildProcess(t *testing.T) {
	h := newFakeHarness(t, HarnessOptions{Command: buildFake(t)})
	requireVerdict(t, conformance.Run(t, h))
}

// lyingHarness hands out the real stores behind a manifest that claims something else.
type lyingHarness struct {
	*FakeHarness
	lie func(*memory.Manifest)
}

type lyingStore struct {
	s *Store
	m memory.Manifest
}

func (l lyingStore) Manifest() memory.Manifest { return l.m }
func (l lyingStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	return l.s.Store(ctx, it)
}
func (l lyingStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	return l.s.Retrieve(ctx, id)
}
func (l lyingStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	return l.s.Search(ctx, q)
}
func (l lyingStore) Close() error { return l.s.Close() }

func (h lyingHarness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	s, err := h.FakeHarness.MakeStore(ctx)
	if err != nil {
		return nil, err
	}
	m := s.Manifest()
	h.lie(&m)
	return lyingStore{s: s.(*Store), m: m.Normalize()}, nil
}

// TestManifestLiesAreCaught runs the matrix with manifests that overstate the adapter: each
// lie must fail exactly the cases that observe it.
func TestManifestLiesAreCaught(t *testing.T) {
	for _, tc := range []struct {
		name string
		lie  func(*memory.Manifest)
		want []conformance.CaseID
	}{
		{"tags in search hits", func(m *memory.Manifest) { m.SearchReturnsTags = true }, []conformance.CaseID{conformance.CaseTagProjection}},
		{"created_at native", func(m *memory.Manifest) {
			m.NativeItemFields = append(m.NativeItemFields, memory.FieldCreatedAt)
			m.DroppedItemFields = []memory.ItemField{memory.FieldMetadata}
		}, []conformance.CaseID{conformance.CaseDirectRetrieval, conformance.CaseDroppedWriteField, conformance.CaseTypedSearch}},
		{"immediate search", func(m *memory.Manifest) { m.SearchConsistency = memory.ConsistencyImmediate }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := lyingHarness{FakeHarness: newFakeHarness(t, HarnessOptions{InProcess: true}), lie: tc.lie}
			if tc.want == nil {
				// The empty query reads kg list, which sees a write at once: claiming immediate
				// search is not a lie the fake can expose, and the suite must not invent one.
				r := conformance.Execute(context.Background(), h, conformance.Options{})
				if failed := r.FailedIDs(); len(failed) != 0 {
					t.Fatalf("immediate claim failed %v", failed)
				}
				return
			}
			r := conformance.Execute(context.Background(), h, conformance.Options{})
			if failed := r.FailedIDs(); !slices.Equal(failed, tc.want) {
				for _, c := range r.Cases {
					if c.Outcome == conformance.Failed {
						t.Logf("%s: %s", c.ID, c.Message)
					}
				}
				t.Fatalf("lie %q failed %v, want %v", tc.name, failed, tc.want)
			}
		})
	}
}
