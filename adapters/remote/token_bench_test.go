package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// BenchmarkBindingToken measures what following a rotated token costs a call: a retrieve
// over loopback (the cheapest call, so the share is the largest) by a Store with a fixed
// Token and by one from FromBinding, whose Binding stats the projected token file (through
// the kubelet's ..data symlink) before each call. The two run interleaved in blocks, so
// other load weighs on both alike, and it reports each one's µs per call and their ratio;
// there is no timed assertion. Token is the check alone.
func BenchmarkBindingToken(b *testing.B) {
	ctx := context.Background()
	store := inmemory.New(inmemory.Options{})
	hs := serve(b, store, "bench")
	it := storetest.BenchItem(0)
	if _, err := store.Store(ctx, it); err != nil {
		b.Fatal(err)
	}
	fixed, err := remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fixed.Close() })
	p := newProjected(b, bindingFiles(hs.URL, "bench", nil))
	bound, err := remote.FromBinding(ctx, p.dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bound.Close() })
	arms := []*remote.Store{fixed, bound}

	b.Run("retrieve", func(b *testing.B) {
		var spent [2]time.Duration
		var calls [2]int
		for i := 0; b.Loop(); i++ {
			a := i / interleaveBlock % len(arms)
			start := time.Now()
			got, err := arms[a].Retrieve(ctx, it.ID)
			if err != nil || got == nil {
				b.Fatalf("arm %d: %v %v", a, got, err)
			}
			spent[a] += time.Since(start)
			calls[a]++
		}
		if calls[1] == 0 {
			b.Fatalf("%d iterations reach no binding call: use at least %d", b.N, 2*interleaveBlock)
		}
		us := func(a int) float64 { return float64(spent[a].Nanoseconds()) / float64(calls[a]) / 1e3 }
		b.ReportMetric(us(0), "fixed-µs")
		b.ReportMetric(us(1), "binding-µs")
		b.ReportMetric(us(1)/us(0), "binding/fixed")
	})

	b.Run("token", func(b *testing.B) {
		bd, err := remote.OpenBinding(p.dir)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = bd.Close() }()
		b.ReportAllocs()
		for b.Loop() {
			if tok, err := bd.Token(); err != nil || tok != "bench" {
				b.Fatalf("Token() = %q, %v", tok, err)
			}
		}
	})
}

var _ memory.Store = (*remote.Store)(nil)
