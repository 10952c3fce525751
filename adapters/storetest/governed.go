package storetest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/google/uuid"
)

// Governed is a scope's governor as GovernedStores drives it (server.Governor): Store
// stores through the quotas, Sweep runs one retention sweep and returns what it removed.
type Governed interface {
	Store(ctx context.Context, it memory.Item) (uuid.UUID, error)
	Sweep(ctx context.Context) (int64, error)
}

// governedBlock is how many stores one arm makes in a row before the other takes over.
const governedBlock = 50

// GovernedSweepEvery is how often GovernedStores starts a sweep: sixty times as often as
// the server's default period (server.DefaultSweepPeriod), so the ratio is an upper bound.
const GovernedSweepEvery = time.Second

// GovernedStores times stores of fresh BenchItems with retention and quotas on (through g)
// against off (plain, the store alone), in one run, and reports on-ns/op, off-ns/op and their ratio on/off (issue 46's goal:
// at most 1.10). The arms alternate in blocks of governedBlock stores; an "on" block
// starts a sweep when GovernedSweepEvery has passed since the last one began, the sweep
// runs beside its stores, and the next "off" block waits (untimed) for it to end, so
// sweeps weigh on the "on" arm alone. The setup must give the sweep work (items expiring
// as the run goes): a run whose sweeps removed nothing fails, as does any error.
func GovernedStores(b *testing.B, plain memory.Store, g Governed) {
	ctx := context.Background()
	store := func(s interface {
		Store(context.Context, memory.Item) (uuid.UUID, error)
	}) func(context.Context, memory.Item) error {
		return func(ctx context.Context, it memory.Item) error {
			_, err := s.Store(ctx, it)
			return err
		}
	}
	arms := struct {
		Plain, Governed func(context.Context, memory.Item) error
		Sweep           func(context.Context) (int64, error)
	}{store(plain), store(g), g.Sweep}
	for k := range BenchWarmup {
		// The first governed store counts the scope; it is setup, not a store's cost.
		if err := arms.Governed(ctx, BenchItem(k)); err != nil {
			b.Fatalf("warm-up, governed: %v", err)
		}
		if err := arms.Plain(ctx, BenchItem(k)); err != nil {
			b.Fatalf("warm-up, plain: %v", err)
		}
	}
	type swept struct {
		n   int64
		d   time.Duration
		err error
	}
	var (
		spent [3]time.Duration
		ops   [3]int
		// sweptBlock is set in an "on" block that started a sweep.
		sweptBlock bool
		sweeps     int
		deleted    int64
		pending    chan swept
		lastAt     time.Time
		sweepTime  time.Duration
	)
	wait := func() {
		if pending == nil {
			return
		}
		r := <-pending
		pending = nil
		if r.err != nil {
			b.Fatalf("sweep: %v", r.err)
		}
		sweeps++
		deleted += r.n
		sweepTime += r.d
	}
	for i := 0; b.Loop(); i++ {
		on := (i/governedBlock)%2 == 0
		if i%governedBlock == 0 {
			wait()
			sweptBlock = false
			if on && time.Since(lastAt) >= GovernedSweepEvery {
				sweptBlock = true
				lastAt = time.Now()
				pending = make(chan swept, 1)
				go func(done chan<- swept) {
					t0 := time.Now()
					n, err := arms.Sweep(ctx)
					done <- swept{n, time.Since(t0), err}
				}(pending)
			}
		}
		store, k := arms.Plain, 0
		if on {
			store, k = arms.Governed, 1
			if !sweptBlock {
				k = 2
			}
		}
		it := BenchItem(i)
		t0 := time.Now()
		if err := store(ctx, it); err != nil {
			b.Fatalf("store %d (governed %v): %v", i, on, err)
		}
		spent[k] += time.Since(t0)
		ops[k]++
	}
	wait()
	if ops[0] == 0 || ops[1]+ops[2] == 0 {
		b.Fatalf("%d plain and %d governed stores: run at least %d (-benchtime %dx)", ops[0], ops[1]+ops[2], 2*governedBlock, 4*governedBlock)
	}
	if deleted == 0 {
		b.Fatalf("%d sweeps removed nothing: the setup gave retention no work, so the ratio would not measure it", sweeps)
	}
	off := float64(spent[0].Nanoseconds()) / float64(ops[0])
	on := float64((spent[1] + spent[2]).Nanoseconds()) / float64(ops[1]+ops[2])
	b.ReportMetric(on, "on-ns/op")
	b.ReportMetric(off, "off-ns/op")
	b.ReportMetric(on/off, "on/off")
	if ops[2] > 0 {
		// The quota's accounting alone: the "on" blocks that ran no sweep.
		b.ReportMetric(float64(spent[2].Nanoseconds())/float64(ops[2])/off, "quota-only/off")
	}
	b.ReportMetric(float64(sweeps), "sweeps")
	b.ReportMetric(float64(deleted)/float64(sweeps), "deleted/sweep")
	b.ReportMetric(float64(sweepTime.Milliseconds())/float64(sweeps), "ms/sweep")
}

// GovernedScope is the scope a governed-store benchmark loads: n items (1M, or
// MAO_BENCH_GOVERNED_N) whose store times are spacing apart, the newest now, so that rate
// items (100 a second, or MAO_BENCH_GOVERNED_EXPIRY) expire each second under Policy.
type GovernedScope struct {
	// N is the number of items to load.
	N int
	// Spacing is the store times' spacing, 1/rate.
	Spacing time.Duration
	// Now is the newest item's store time; item i (of N, in load order) is stored at
	// StoredAt(i).
	Now time.Time
}

// NewGovernedScope reads the size and churn from the environment, failing on a bad value.
func NewGovernedScope(b *testing.B) GovernedScope {
	env := func(name string, def, lo, hi int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			b.Fatalf("%s=%q: want an integer from %d to %d", name, v, lo, hi)
		}
		return n
	}
	n := env("MAO_BENCH_GOVERNED_N", 1_000_000, 20_000, 100_000_000)
	rate := env("MAO_BENCH_GOVERNED_EXPIRY", 100, 1, 1_000_000)
	return GovernedScope{N: n, Spacing: time.Second / time.Duration(rate), Now: time.Now()}
}

// StoredAt is item i's store time.
func (g GovernedScope) StoredAt(i int) time.Time {
	return g.Now.Add(-time.Duration(g.N-1-i) * g.Spacing)
}

// Policy is the retention the benchmark enforces, called once the load is done: a max age
// under which the load's oldest second has expired now and Spacing's rate expires after (the
// load's own duration is added, so a slow load does not leave a backlog for the first
// sweep), and a max-items limit (2N) that is never reached but makes each sweep compare.
func (g GovernedScope) Policy() memory.RetentionPolicy {
	return memory.RetentionPolicy{MaxAge: time.Duration(g.N)*g.Spacing + time.Since(g.Now) - time.Second, MaxItems: 2 * int64(g.N)}
}
