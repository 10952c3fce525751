package inmemory_test

import (
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
)

// The reference store must pass the same behaviour tests as the external adapters, so a
// disagreement between a backend and the reference shows up as a failure on one side.

func factory(*testing.T) storetest.Harness { return storetest.Single(inmemory.New(inmemory.Options{})) }

func TestSharedExactness(t *testing.T) { storetest.Exactness(t, factory) }

func TestSharedLiteralText(t *testing.T) { storetest.LiteralText(t, factory) }

func TestSharedPredicatesAndOrder(t *testing.T) { storetest.PredicatesAndOrder(t, factory) }

func TestSharedRejectsInvalidInput(t *testing.T) { storetest.RejectsInvalidInput(t, factory) }

func TestSharedConcurrentWritersLoseNothing(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, factory, 40)
}

func TestSharedHostileData(t *testing.T) {
	storetest.HostileData(t, factory, storetest.HostileOptions{})
}

func TestSharedRetention(t *testing.T) {
	storetest.Retention(t, func(_ *testing.T, clock func() time.Time) storetest.Harness {
		return storetest.Single(inmemory.New(inmemory.Options{Now: clock}))
	})
}
