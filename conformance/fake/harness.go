package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the adapter id the fake publishes unless Config.Manifest says otherwise.
const AdapterID = "fake"

// ServiceVersion is the version string the fake harness reports for its service.
const ServiceVersion = "fake-service/1.0.0"

// DefaultFilters are the metadata keys the fake adapter documents as filterable.
var DefaultFilters = []string{"branch_id", "source"}

// Config configures a Harness.
type Config struct {
	// Manifest is what the adapter publishes. The zero value means
	// TruthfulManifest(Service, Adapter).
	Manifest memory.Manifest
	// Service selects the service behaviors.
	Service ServiceKnobs
	// Adapter selects adapter behaviors and defects.
	Adapter AdapterKnobs
}

// TruthfulManifest is the manifest a correct adapter over a service with these knobs must
// publish: the field classification, filter set, consistency, fidelities and flags that the
// service's behavior actually supports.
func TruthfulManifest(s ServiceKnobs, a AdapterKnobs) memory.Manifest {
	metaDropped := s.DropMetadata || a.RejectMetadata
	native := []memory.ItemField{memory.FieldID, memory.FieldContent, memory.FieldTags}
	var dropped []memory.ItemField
	if metaDropped {
		dropped = append(dropped, memory.FieldMetadata)
	} else {
		native = append(native, memory.FieldMetadata)
	}
	if s.DropCreatedAt {
		dropped = append(dropped, memory.FieldCreatedAt)
	} else {
		native = append(native, memory.FieldCreatedAt)
	}
	preserves := !metaDropped && !s.AlterMetadata
	var filters []string
	if !metaDropped {
		for _, k := range DefaultFilters {
			if s.FilterableKeys == nil || slices.Contains(s.FilterableKeys, k) {
				filters = append(filters, k)
			}
		}
	}
	consistency := memory.ConsistencyImmediate
	if s.EventualIndex {
		consistency = memory.ConsistencyEventual
	}
	// A native field that is not reconstructed exactly makes an operation lossy.
	metaLossy := !metaDropped && !preserves
	retrieve := memory.FidelityFull
	switch {
	case s.NormalizeTimestamps || s.MicrosecondTimestamps || metaLossy:
		retrieve = memory.FidelityLossy
	case len(dropped) > 0:
		retrieve = memory.FidelityNativeFields
	}
	search := memory.FidelityFull
	switch {
	case s.NormalizeTimestamps || s.MicrosecondTimestamps || metaLossy || (s.SearchDropsMetadata && !metaDropped):
		search = memory.FidelityLossy
	case len(dropped) > 0 || s.DropSearchTags:
		search = memory.FidelityNativeFields
	}
	return memory.Manifest{
		Adapter:           AdapterID,
		NativeItemFields:  native,
		DroppedItemFields: dropped,
		SupportedFilters:  filters,
		SearchConsistency: consistency,
		RetrieveFidelity:  retrieve,
		SearchFidelity:    search,
		SearchReturnsTags: !s.DropSearchTags,
		PreservesMetadata: preserves,
	}.Normalize()
}

// Harness is the conformance harness over the fake service. It implements the seed's five
// capabilities and every optional one the conformance package defines. It is safe for
// concurrent use.
type Harness struct {
	cfg      Config
	manifest memory.Manifest
	svc      *service

	mu     sync.Mutex
	closed bool
}

// New returns a harness over a fresh fake service.
func New(cfg Config) *Harness {
	m := cfg.Manifest
	if m.Adapter == "" {
		m = TruthfulManifest(cfg.Service, cfg.Adapter)
	}
	return &Harness{cfg: cfg, manifest: m, svc: newService(cfg.Service)}
}

// Manifest returns the manifest the harness's adapters publish.
func (h *Harness) Manifest() memory.Manifest { return h.manifest }

func (h *Harness) live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHarnessClose
	}
	return nil
}

// MakeStore returns a new adapter over the fake transport. While the transport is cut, the
// adapter's transport fails to be created, and every explicit call reports that.
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	if err := h.live(ctx); err != nil {
		return nil, err
	}
	a := &Adapter{manifest: h.manifest, knobs: h.cfg.Adapter, svc: h.svc}
	h.svc.mu.Lock()
	if h.svc.down {
		a.dialErr = fmt.Errorf("fake transport: create client: %w", errRefused)
	}
	h.svc.mu.Unlock()
	return a, nil
}

// Reset empties the service and restores the transport and every fault switch.
func (h *Harness) Reset(ctx context.Context) error {
	if err := h.live(ctx); err != nil {
		return err
	}
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	h.svc.reset()
	return nil
}

// MakeSearchIndexVisible indexes every record written so far (except those an adapter
// defect flagged as never indexable).
func (h *Harness) MakeSearchIndexVisible(ctx context.Context) error {
	if err := h.live(ctx); err != nil {
		return err
	}
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	for k, r := range h.svc.records {
		h.svc.indexed[k] = !r.NoIndex
	}
	return nil
}

// MakeTransportUnavailable cuts the transport until Reset: existing adapters fail on their
// next call (refused, or mid-call with ServiceKnobs.MidCallOutage) and new ones fail to
// create their transport.
func (h *Harness) MakeTransportUnavailable(ctx context.Context) error {
	if err := h.live(ctx); err != nil {
		return err
	}
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	h.svc.down = true
	return nil
}

// Close marks the harness closed; later calls fail.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

// ServiceVersion reports the fake service's version.
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	if err := h.live(ctx); err != nil {
		return "", err
	}
	return ServiceVersion, nil
}

// MakeWrongKindRecord plants an indexed "note" record, which is not a memory item, and
// returns its identity.
func (h *Harness) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	if err := h.live(ctx); err != nil {
		return uuid.Nil, err
	}
	id := uuid.New()
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	key := id.String()
	h.svc.records[key] = record{Kind: "note", Key: key, Body: json.RawMessage(`{"note":"not a memory item"}`), Labels: []string{"note"}}
	h.svc.order = append(h.svc.order, key)
	h.svc.indexed[key] = true
	return id, nil
}

// MakeWriteRejected returns an item whose write the service will reject.
func (h *Harness) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	if err := h.live(ctx); err != nil {
		return memory.Item{}, err
	}
	it := memory.NewItem(json.RawMessage(`{"rejected":true}`), "rejected")
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	h.svc.rejectKeys[it.ID.String()] = true
	return it, nil
}

// RequestCount returns the number of requests that reached the transport.
func (h *Harness) RequestCount() int64 {
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	return h.svc.requests
}

// DocumentedFilter returns the documented native filter for key = value: attribute
// "md:<key>" compared with the value's compact JSON.
func (h *Harness) DocumentedFilter(key string, value []byte) string {
	return documentedFilter(attrKey(key), compactJSON(value))
}

// RecordedFilters returns every native filter that reached the service since Reset.
func (h *Harness) RecordedFilters() []string {
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	return slices.Clone(h.svc.filters)
}

// MakeResponsesMalformed makes every later read response malformed until Reset.
func (h *Harness) MakeResponsesMalformed(ctx context.Context) error {
	if err := h.live(ctx); err != nil {
		return err
	}
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	h.svc.malformed = true
	return nil
}

// MakeNextWriteIdentityless makes the next write's success response lack an identity.
func (h *Harness) MakeNextWriteIdentityless(ctx context.Context) error {
	if err := h.live(ctx); err != nil {
		return err
	}
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	h.svc.identityless = true
	return nil
}
