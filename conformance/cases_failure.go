package conformance

// This file holds the cases about failure: an outage and a rejected write must surface as the
// contract's errors, never as empty answers or a silent fallback.

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var caseTransportOutage = Case{
	ID:          CaseTransportOutage,
	Title:       "Transport outage",
	Description: "with the transport cut, store, retrieve and search raise MemoryAdapterUnavailable, also for a store created while the transport is down",
	Hint:        "the adapter swallows transport errors into None, [] or a generated id, or falls back to another store",
	run: func(c *caseRun) {
		stored := c.fixture(1)
		c.mustStore(stored)
		if err := c.h.MakeTransportUnavailable(c.ctx); err != nil {
			c.harnessFailed("MakeTransportUnavailable", err)
		}
		if c.check("transport-outage/calls-unavailable") {
			c.expectUnavailable("existing store", c.store, stored.ID)
		}
		// A store made while the transport is down: the failure surfaces from the first
		// explicit call (ADR-0093 D4), or already from construction.
		s, err := c.h.MakeStore(c.ctx)
		if c.check("transport-outage/creation-unavailable") {
			switch {
			case err != nil && errors.Is(err, memory.ErrUnavailable):
				c.notef("a store made during the outage failed at construction with MemoryAdapterUnavailable")
			case err != nil:
				c.failf("making a store during the outage failed with %v, want MemoryAdapterUnavailable (or success and Unavailable on first use)", err)
			case s == nil:
				c.failf("harness MakeStore returned a nil store")
			default:
				c.expectUnavailable("store created during the outage", s, stored.ID)
			}
		}
		if s != nil {
			closeStore(s)
		}
		c.notef("explicit calls raise MemoryAdapterUnavailable during the outage")
	},
}

func (c *caseRun) expectUnavailable(which string, s memory.ExternalStore, known uuid.UUID) {
	it := c.fixture(2)
	id, err := s.Store(c.ctx, it)
	if !errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
		c.failf("%s: store during the outage returned (%s, %v), want (nil UUID, MemoryAdapterUnavailable)", which, id, err)
	}
	got, err := s.Retrieve(c.ctx, known)
	if !errors.Is(err, memory.ErrUnavailable) || got != nil {
		c.failf("%s: retrieve during the outage returned (item %v, %v), want MemoryAdapterUnavailable", which, got != nil, err)
	}
	hits, err := s.Search(c.ctx, memory.Query{Limit: memory.DefaultLimit})
	if !errors.Is(err, memory.ErrUnavailable) || len(hits) != 0 {
		c.failf("%s: search during the outage returned (%d hits, %v), want MemoryAdapterUnavailable", which, len(hits), err)
	}
}

var caseRejectedWrite = Case{
	ID:          CaseRejectedWrite,
	Title:       "Rejected write",
	Description: "a write the service rejects raises MemoryAdapterError and returns no identifier",
	Hint:        "the adapter ignores the service's rejection status and returns item.ID",
	run: func(c *caseRun) {
		c.needCapability(CapWriteRejected, "the harness cannot make the service reject a write (WriteRejecter)")
		it, err := c.h.(WriteRejecter).MakeWriteRejected(c.ctx)
		if err != nil {
			c.fatalf("harness MakeWriteRejected failed: %v", err)
		}
		id, err := c.store.Store(c.ctx, it)
		if c.check("rejected-write/error-no-id") && (!isAdapterError(err) || id != uuid.Nil) {
			c.failf("a write the service rejected returned (%s, %v), want (nil UUID, MemoryAdapterError)", id, err)
		}
		if obs, ok := c.checkAnswer("rejected-write/answered-502"); ok {
			c.expectAnswer(obs, "a write the service rejected", http.StatusBadGateway, memory.ProblemAdapterError)
		}
		c.notef("a rejected write raises MemoryAdapterError and returns no id")
	},
}
