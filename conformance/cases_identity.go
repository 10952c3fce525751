package conformance

// This file holds the cases about identity and writes: the store's surface, what store returns,
// what retrieve returns for known, unknown and foreign ids, and what a write may drop.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var caseStructuralSurface = Case{
	ID:          CaseStructuralSurface,
	Title:       "Structural surface",
	Description: "the store is an ExternalStore whose manifest validates and stays the same for the instance's lifetime",
	Hint:        "Manifest() returns an incoherent manifest or a different value on a later call; build the manifest once in the constructor",
	run: func(c *caseRun) {
		if c.check("structural-surface/manifest-validates") {
			if err := c.m.Validate(); err != nil {
				c.fatalf("manifest does not validate: %v", err)
			}
		}
		if c.check("structural-surface/manifest-immutable") {
			// Exercise the store in between: a manifest that changes after use is as wrong as
			// one that changes between two reads.
			it := c.fixture(0)
			_, _ = c.store.Store(c.ctx, it)
			_, _ = c.store.Search(c.ctx, memory.Query{Limit: 1})
			for i := range 2 {
				if later := c.store.Manifest(); !later.Equal(c.m) {
					c.fatalf("Manifest() changed during the instance's lifetime (read %d): first %s, later %s", i+2, c.m.Hash(), later.Hash())
				}
			}
		}
		c.notef("manifest %s validates and is stable", c.m.Hash())
	},
}

var caseStoreIdentifier = Case{
	ID:          CaseStoreIdentifier,
	Title:       "Store identifier",
	Description: "a successful store returns the item's own id; a write acknowledged without an identity is a MemoryAdapterError",
	Hint:        "the adapter returns the service's native key or a generated UUID instead of item.ID, or accepts a write response that lacks an identity",
	run: func(c *caseRun) {
		a, b := c.fixture(1), c.fixture(2)
		if c.check("store-identifier/returns-item-id") {
			for _, it := range []memory.Item{a, b} {
				id, err := c.store.Store(c.ctx, it)
				if err != nil {
					c.fatalf("store failed: %v", err)
				}
				if id != it.ID {
					c.failf("store returned %s, want the item's own id %s", id, it.ID)
				}
			}
		}
		if !c.has(CapIdentitylessWrite) {
			c.lack(CapIdentitylessWrite)
			c.notef("identityless write response not observable (missing harness capability %s: IdentitylessWriter)", CapIdentitylessWrite)
			return
		}
		if err := c.h.(IdentitylessWriter).MakeNextWriteIdentityless(c.ctx); err != nil {
			c.fatalf("harness MakeNextWriteIdentityless failed: %v", err)
		}
		it := c.fixture(3)
		id, err := c.store.Store(c.ctx, it)
		if c.check("store-identifier/identityless-write-fails") {
			if err == nil || !isAdapterError(err) || id != uuid.Nil {
				c.failf("a write acknowledged without an identity returned (%s, %v), want (nil UUID, MemoryAdapterError)", id, err)
			}
		}
	},
}

// fieldProblems compares got with stored on the given fields.
func fieldProblems(stored, got memory.Item, fields ...memory.ItemField) []string {
	var out []string
	for _, f := range fields {
		switch f {
		case memory.FieldID:
			if got.ID != stored.ID {
				out = append(out, fmt.Sprintf("id %s, want %s", got.ID, stored.ID))
			}
		case memory.FieldContent:
			if !memory.JSONEqual(got.ContentJSON(), stored.ContentJSON()) {
				out = append(out, fmt.Sprintf("content %s, want %s", short(got.ContentJSON()), short(stored.ContentJSON())))
			}
		case memory.FieldCreatedAt:
			if !memory.SameTimestamp(got.CreatedAt, stored.CreatedAt) {
				out = append(out, createdAtProblem(stored.CreatedAt, got.CreatedAt))
			}
		case memory.FieldTags:
			if !slices.Equal(got.Tags, stored.Tags) {
				out = append(out, fmt.Sprintf("tags %q, want %q", got.Tags, stored.Tags))
			}
		case memory.FieldMetadata:
			if !memory.MetadataEqual(got.Metadata, stored.Metadata) {
				gb, _ := json.Marshal(got.Metadata)
				sb, _ := json.Marshal(stored.Metadata)
				out = append(out, fmt.Sprintf("metadata %s, want %s", short(gb), short(sb)))
			}
		}
	}
	return out
}

var caseDirectRetrieval = Case{
	ID:          CaseDirectRetrieval,
	Title:       "Direct retrieval",
	Description: "a stored id is retrievable at once; id, content and tags are exact at every fidelity, every other native field at full and native_fields",
	Hint:        "tags are de-duplicated or reordered, or a native field is normalised (timestamps, numbers via float64, metadata) while the retrieve fidelity is full or native_fields",
	run: func(c *caseRun) {
		it := c.fixture(1)
		c.mustStore(it)
		// No MakeSearchIndexVisible: a successful store must be directly retrievable at once.
		got, err := c.store.Retrieve(c.ctx, it.ID)
		if c.check("direct-retrieval/retrievable-at-once") {
			if err != nil || got == nil {
				c.fatalf("retrieve right after a successful store returned (%v, %v), want the item (retrieve must not wait for a search index)", got != nil, err)
			}
		}
		if got == nil {
			// Only reachable when the check above is disabled by the mutation test.
			return
		}
		if c.check("direct-retrieval/anchors-exact") {
			// id and content are ADR-0093's direct-retrieval anchors at every fidelity: a service
			// that cannot preserve them must reject the write, not normalise them.
			for _, p := range fieldProblems(it, *got, memory.FieldID, memory.FieldContent) {
				c.failf("retrieve: %s", p)
			}
		}
		if c.check("direct-retrieval/tags-anchor-exact") {
			// tags are the third anchor: exact (order and duplicates) even at lossy fidelity.
			for _, p := range fieldProblems(it, *got, memory.FieldTags) {
				c.failf("retrieve (tags are a direct-retrieval anchor at every fidelity): %s", p)
			}
		}
		exact := c.m.RetrieveFidelity != memory.FidelityLossy
		if c.check("direct-retrieval/created-at-fidelity") {
			if c.m.Native(memory.FieldCreatedAt) && exact {
				for _, p := range fieldProblems(it, *got, memory.FieldCreatedAt) {
					c.failf("retrieve at %s fidelity with created_at native: %s", c.m.RetrieveFidelity, p)
				}
			}
		}
		if c.check("direct-retrieval/metadata-fidelity") {
			// full and native_fields promise every native field round-trips on retrieve, whatever
			// preserves_metadata says (that flag is metadata-projection's business).
			if c.m.Native(memory.FieldMetadata) && exact {
				for _, p := range fieldProblems(it, *got, memory.FieldMetadata) {
					c.failf("retrieve at %s fidelity with metadata native: %s", c.m.RetrieveFidelity, p)
				}
			}
		}
		verified, skipped := []string{"id", "content", "tags"}, []string(nil)
		for _, f := range []memory.ItemField{memory.FieldCreatedAt, memory.FieldMetadata} {
			switch {
			case !c.m.Native(f):
			case exact:
				verified = append(verified, string(f))
			default:
				skipped = append(skipped, string(f))
			}
		}
		c.notef("retrieve at %s fidelity returns %s exactly", c.m.RetrieveFidelity, strings.Join(verified, ", "))
		if len(skipped) > 0 {
			c.notef("native %s not compared: lossy retrieve fidelity permits normalising them", strings.Join(skipped, ", "))
		}
	},
}

var caseUnknownID = Case{
	ID:          CaseUnknownID,
	Title:       "Unknown id",
	Description: "retrieve of an unknown id returns no item and no error, never an empty item or a search result",
	Hint:        "retrieve maps 'not found' to an empty Item, or is implemented as ranked search with the UUID as query text",
	run: func(c *caseRun) {
		unknown := uuid.New()
		// A stored item that mentions the unknown id in its content catches a retrieve
		// implemented as ranked search with the UUID as query text.
		decoy := c.fixture(1)
		decoy.Content = json.RawMessage(fmt.Sprintf(`{"mentions":%q}`, unknown.String()))
		c.mustStore(decoy)
		c.visible([]uuid.UUID{decoy.ID})
		got, err := c.store.Retrieve(c.ctx, unknown)
		if c.check("unknown-id/none") {
			if err != nil {
				c.failf("retrieve of an unknown id returned error %v, want no item and no error", err)
			} else if got != nil {
				c.failf("retrieve of an unknown id returned an item (id %s), want none (not an empty item, not a search result)", got.ID)
			}
		}
		c.notef("unknown id returns no item")
	},
}

var caseWrongNativeKind = Case{
	ID:          CaseWrongNativeKind,
	Title:       "Wrong native kind",
	Description: "a service record of another kind under the requested identity is reported as absent, never coerced",
	Hint:        "retrieve does not check the native record kind before projecting it into an Item",
	run: func(c *caseRun) {
		c.needCapability(CapWrongKindRecord, "the harness cannot plant a non-memory service record (WrongKindMaker)")
		id, err := c.h.(WrongKindMaker).MakeWrongKindRecord(c.ctx)
		if err != nil {
			c.fatalf("harness MakeWrongKindRecord failed: %v", err)
		}
		got, err := c.store.Retrieve(c.ctx, id)
		if c.check("wrong-native-kind/retrieve-none") {
			if err != nil || got != nil {
				c.failf("retrieve of a non-memory record returned (item %v, %v), want no item and no error", got != nil, err)
			}
		}
		anchor := c.fixture(1)
		c.mustStore(anchor)
		hits := c.visible([]uuid.UUID{anchor.ID})
		if c.check("wrong-native-kind/search-excludes") {
			if _, found := findHit(hits, id); found {
				c.failf("search returned the non-memory record %s coerced into an item", id)
			}
		}
		c.notef("non-memory record is absent from retrieve and search")
	},
}

var caseDroppedWriteField = Case{
	ID:          CaseDroppedWriteField,
	Title:       "Dropped write field",
	Description: "a field in dropped_item_fields is rejected before transport or comes back as its default; an undeclared field is never dropped",
	Hint:        "the service silently discards a field (metadata, created_at) that the manifest lists as native, or keeps one the manifest lists as dropped",
	run: func(c *caseRun) {
		it := c.fixture(1)
		it.Metadata = map[string]json.RawMessage{"probe": json.RawMessage(`{"kept":[1,2,3]}`), "seq": json.RawMessage(`1`)}
		var id uuid.UUID
		var err error
		silent, observable := c.silent(func() { id, err = c.store.Store(c.ctx, it) })
		if err != nil {
			// Rejection is allowed only for declared-dropped fields, before any transport.
			if c.check("dropped-write-field/rejection-allowed") {
				if !isAdapterError(err) {
					c.fatalf("store of an item with non-default fields failed with %v, want success or MemoryAdapterError", err)
				}
				if len(c.m.DroppedItemFields) == 0 {
					c.fatalf("store rejected an item although no field is declared dropped: %v", err)
				}
				if observable && !silent {
					c.fatalf("store rejected the item only after a request reached the transport (reject before transport): %v", err)
				}
			}
			if !observable {
				c.notef("rejection before transport not observable (missing harness capability %s: TransportObserver or BackendCallCounter)", CapBackendCalls)
			}
			c.notef("item with values in dropped fields %v rejected before transport", c.m.DroppedItemFields)
			return
		}
		_ = id
		got, err := c.store.Retrieve(c.ctx, it.ID)
		if err != nil || got == nil {
			c.fatalf("setup: retrieve after store returned (%v, %v)", got != nil, err)
		}
		if c.m.Dropped(memory.FieldMetadata) {
			if c.check("dropped-write-field/dropped-metadata-default") && len(got.Metadata) != 0 {
				c.failf("metadata is declared dropped but retrieve returned %d keys, want the default {}", len(got.Metadata))
			}
		} else if c.check("dropped-write-field/native-metadata-survives") {
			for k := range it.Metadata {
				if _, ok := got.Metadata[k]; !ok {
					c.failf("metadata is not declared dropped but key %q did not survive store/retrieve", k)
				}
			}
		}
		if c.m.Dropped(memory.FieldCreatedAt) {
			if c.check("dropped-write-field/dropped-created-at-not-kept") && memory.SameTimestamp(got.CreatedAt, it.CreatedAt) {
				c.failf("created_at is declared dropped but retrieve returned the stored value %s", memory.FormatTimestamp(it.CreatedAt))
			}
		} else if c.check("dropped-write-field/native-created-at-survives") && math.Abs(got.CreatedAt-it.CreatedAt) > 24*60*60 {
			// Even a lossy created_at stays near its value; a default (epoch, "now") does not.
			c.failf("created_at is not declared dropped but retrieve returned %s for a stored %s", memory.FormatTimestamp(got.CreatedAt), memory.FormatTimestamp(it.CreatedAt))
		}
		c.notef("dropped fields %v come back as defaults; other fields survive", c.m.DroppedItemFields)
	},
}

// createdAtProblem describes a created_at that did not round-trip, naming the usual cause
// when the value came back rounded to the microsecond or to the second.
func createdAtProblem(stored, got float64) string {
	msg := fmt.Sprintf("created_at %s, want %s (bit-exact)", memory.FormatTimestamp(got), memory.FormatTimestamp(stored))
	switch {
	case memory.SameTimestamp(got, math.Round(stored*1e6)/1e6):
		msg += ": the store keeps microseconds (a timestamptz or an integer column); keep the double, or declare created_at lossy"
	case memory.SameTimestamp(got, math.Trunc(stored)):
		msg += ": the store keeps whole seconds; keep the double, or declare created_at lossy"
	}
	return msg
}
