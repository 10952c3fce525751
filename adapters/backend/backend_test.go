package backend

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

func open(context.Context, Config) (memory.ExternalStore, error) { return nil, nil }

func harness(context.Context, Config) (conformance.Harness, error) { return nil, nil }

// registerErr registers b and returns the panic's message, or "".
func registerErr(b Backend) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	Register(b)
	return ""
}

func TestRegisterRefusesEntriesThatCannotWork(t *testing.T) {
	Register(Backend{Name: "tablea", Type: "TableA", Runtime: Runtime{Open: open, Harness: harness}})
	for name, tc := range map[string]struct {
		b    Backend
		want string
	}{
		"no name":           {Backend{Type: "X1", Runtime: Runtime{Open: open, Harness: harness}}, "lower-case"},
		"upper-case name":   {Backend{Name: "Toy", Type: "X2"}, "lower-case"},
		"nothing to run":    {Backend{Name: "idle"}, "neither a Type"},
		"open alone":        {Backend{Name: "half", Runtime: Runtime{Open: open}}, "needs a Harness"},
		"taken name":        {Backend{Name: "tablea", Type: "X3"}, "registered twice"},
		"taken type":        {Backend{Name: "tableb", Type: "TableA"}, "type TableA is registered twice"},
		"not a call":        {Backend{Name: "tablec", Type: "X4", RepeatedCalls: []string{"delete"}}, `"delete" is not a call`},
		"external is taken": {Backend{Name: "mine", Type: memoryv1alpha1.BackendExternal}, "registered twice"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := registerErr(tc.b); !strings.Contains(got, tc.want) {
				t.Fatalf("Register panicked with %q, want one containing %q", got, tc.want)
			}
		})
	}
	if _, ok := Lookup("tableb"); ok {
		t.Fatal("a refused entry is in the table")
	}
}

func purge(context.Context, Config) (PurgeResult, error) { return PurgeResult{}, nil }

// provideErr provides r under name and returns the panic's message, or "".
func provideErr(name string, r Runtime) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	Provide(name, r)
	return ""
}

// TestProvideCompletesTheOperatorsSide: a backend's <name>deploy package registers the
// operator's side (what the manager links), its own package the binary's side; Provide joins
// them in the one entry and refuses a runtime that does not fit it.
func TestProvideCompletesTheOperatorsSide(t *testing.T) {
	Register(Backend{Name: "splitsql", Type: "SplitSQL"})
	Register(Backend{Name: "splitkv", Type: "SplitKV", Purges: true})
	before, _ := ForType("SplitSQL")
	if before.Open != nil || before.Purges {
		t.Fatalf("the operator's side alone has a runtime or a purge: %+v", before)
	}
	for name, tc := range map[string]struct {
		name string
		r    Runtime
		want string
	}{
		"no entry":               {"nosuch", Runtime{Open: open, Harness: harness}, "no entry"},
		"no open":                {"splitsql", Runtime{Harness: harness}, "no Open"},
		"open alone":             {"splitsql", Runtime{Open: open}, "needs a Harness"},
		"an undeclared purge":    {"splitsql", Runtime{Open: open, Harness: harness, Purge: purge}, "Purges=false but the runtime has a Purge"},
		"a declared purge lacks": {"splitkv", Runtime{Open: open, Harness: harness}, "Purges=true but the runtime has none"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := provideErr(tc.name, tc.r); !strings.Contains(got, tc.want) {
				t.Fatalf("Provide panicked with %q, want one containing %q", got, tc.want)
			}
		})
	}
	if b, _ := Lookup("splitsql"); b.Open != nil {
		t.Fatal("a refused runtime is in the table")
	}
	Provide("splitsql", Runtime{Open: open, Harness: harness, ProductionFlags: []string{"splitsql-path"}})
	Provide("splitkv", Runtime{Open: open, Harness: harness, Purge: purge})
	for _, name := range []string{"splitsql", "splitkv"} {
		b, _ := Lookup(name)
		byType, _ := ForType(b.Type)
		if b.Open == nil || b.Harness == nil || byType != b {
			t.Fatalf("%s after Provide: %+v (by type %p, by name %p)", name, b, byType, b)
		}
	}
	if b, _ := Lookup("splitsql"); b != before || b.ProductionFlags[0] != "splitsql-path" {
		t.Fatalf("Provide replaced the entry instead of completing it: %+v", b)
	}
	if got := provideErr("splitsql", Runtime{Open: open, Harness: harness}); !strings.Contains(got, "provided twice") {
		t.Fatalf("a second Provide panicked with %q, want \"provided twice\"", got)
	}
	if got := registerErr(Backend{Name: "lonepurge", Type: "LonePurge", Runtime: Runtime{Purge: purge}}); !strings.Contains(got, "a Purge needs an Open") {
		t.Fatalf("Register with a Purge and no Open panicked with %q", got)
	}
	Register(Backend{Name: "wholekv", Type: "WholeKV", Runtime: Runtime{Open: open, Harness: harness, Purge: purge}})
	if b, _ := Lookup("wholekv"); !b.Purges {
		t.Fatal("Register did not set Purges for an entry given with its Purge")
	}
}

func TestLookups(t *testing.T) {
	Register(Backend{Name: "tablez", Type: "TableZ", Runtime: Runtime{Open: open, Harness: harness}, RepeatedCalls: []string{CallSearch}})
	Register(Backend{Name: "tabley", Runtime: Runtime{Open: open, Harness: harness}})
	b, ok := ForType("TableZ")
	if !ok || b.Name != "tablez" || !b.Repeats(CallSearch) || b.Repeats(CallStore) {
		t.Fatalf("ForType(TableZ) = %+v, %v", b, ok)
	}
	if b, ok := Lookup("tabley"); !ok || b.Type != "" {
		t.Fatalf("Lookup(tabley) = %+v, %v", b, ok)
	}
	var names []string
	for _, b := range Runnable() {
		names = append(names, b.Name)
		if b.Name == "external" {
			t.Fatal("Runnable lists external, which the binary never opens")
		}
	}
	if !strings.Contains(strings.Join(names, ","), "tabley,tablez") {
		t.Fatalf("Runnable = %v, want sorted and holding tabley, tablez", names)
	}
	found := false
	for _, typ := range Types() {
		found = found || typ == "TableZ"
		if typ == "" {
			t.Fatal("Types lists the empty type of a command-only backend")
		}
	}
	if !found {
		t.Fatalf("Types() = %v, want TableZ among them", Types())
	}
}

func TestDocumentedLifecycleIsACopy(t *testing.T) {
	b, ok := ForType(memoryv1alpha1.BackendExternal)
	if !ok {
		t.Fatal("external is not registered")
	}
	l := b.DocumentedLifecycle()
	*l.Retry.Store.MaxAttempts = 9
	if got := *b.DocumentedLifecycle().Retry.Store.MaxAttempts; got != 1 {
		t.Fatalf("changing a returned lifecycle changed the table's: %d", got)
	}
}

func TestRetryPolicyOf(t *testing.T) {
	for name, tc := range map[string]struct {
		in   memory.RetryPolicy
		want memoryv1alpha1.RetryPolicy
	}{
		"once": {memory.RetryPolicy{MaxAttempts: 1}, memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](1)}},
		"equal": {memory.RetryPolicy{MaxAttempts: 3, Backoff: 25 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Jitter: memory.JitterEqual},
			memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](3), Backoff: memoryv1alpha1.NewDuration(25 * time.Millisecond), MaxBackoff: memoryv1alpha1.NewDuration(200 * time.Millisecond), Jitter: memoryv1alpha1.JitterEqual}},
		"full": {memory.RetryPolicy{MaxAttempts: 2, Backoff: time.Second, Jitter: memory.JitterFull},
			memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](2), Backoff: memoryv1alpha1.NewDuration(time.Second), Jitter: memoryv1alpha1.JitterFull}},
		"none": {memory.RetryPolicy{MaxAttempts: 2, Jitter: memory.JitterNone},
			memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](2), Jitter: memoryv1alpha1.JitterNone}},
	} {
		t.Run(name, func(t *testing.T) {
			got := RetryPolicyOf(tc.in)
			if !reflect.DeepEqual(got, &tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	err := fmt.Errorf("opening: %w", Usagef("--%s is bad", "flag"))
	if !IsUsage(err) || !strings.Contains(err.Error(), "--flag is bad") {
		t.Fatalf("IsUsage(%v) = false", err)
	}
	if IsUsage(fmt.Errorf("outage: %w", memory.ErrUnavailable)) {
		t.Fatal("an outage reads as a usage error")
	}
}
