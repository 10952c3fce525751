package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterKnobs inject adapter behaviors. RejectMetadata is a legitimate choice when the
// manifest drops metadata; every other knob is a defect that no manifest makes conformant.
type AdapterKnobs struct {
	// RejectMetadata rejects, before transport, writes carrying metadata.
	RejectMetadata bool
	// RejectMetadataLate rejects writes carrying metadata only after sending them.
	RejectMetadataLate bool
	// MutableManifest changes the published manifest after its first read.
	MutableManifest bool
	// ReturnWrongID returns a fresh UUID from Store instead of the item's id.
	ReturnWrongID bool
	// AcceptIdentityless treats a write response without an identity as success.
	AcceptIdentityless bool
	// RetrieveViaSearch implements Retrieve as a text search for the UUID.
	RetrieveViaSearch bool
	// UnknownAsEmptyItem returns an empty Item for an unknown id.
	UnknownAsEmptyItem bool
	// CoerceWrongKindRetrieve projects non-memory records on Retrieve.
	CoerceWrongKindRetrieve bool
	// CoerceWrongKindSearch projects non-memory records in search hits.
	CoerceWrongKindSearch bool
	// ContentFloat64 encodes content through float64 on write.
	ContentFloat64 bool
	// DedupTags removes duplicate tags on write.
	DedupTags bool
	// PassMalformed returns partial items instead of failing on malformed payloads.
	PassMalformed bool
	// LeakNativeRecords appends the service's native stats object to search results.
	LeakNativeRecords bool
	// LimitIgnored sends no limit to the service (it returns everything).
	LimitIgnored bool
	// LimitZeroDefault treats limit 0 as lionagi's default 20.
	LimitZeroDefault bool
	// SendLimitZero sends a limit-0 search to the service before answering [].
	SendLimitZero bool
	// NegativeLimitSlice passes a negative limit on to the service's slice semantics.
	NegativeLimitSlice bool
	// ValidateAfterTransport validates the query only after the service call.
	ValidateAfterTransport bool
	// EmptyQueryWildcard sends the text "*" for a query without predicates.
	EmptyQueryWildcard bool
	// IgnoreUnsupportedFilters strips unsupported filter keys instead of rejecting them.
	IgnoreUnsupportedFilters bool
	// FirstKeyOnly reports only the first rejected key.
	FirstKeyOnly bool
	// IgnoreSupportedFilter does not send supported filters to the service.
	IgnoreSupportedFilter bool
	// WrongFilterKey sends the metadata key without its documented "md:" prefix.
	WrongFilterKey bool
	// FilterValueAsText sends filter values as JSON strings of their text.
	FilterValueAsText bool
	// HideOutage turns transport failures into success-looking results.
	HideOutage bool
	// HideLostResponses treats a connection reset mid-call as success (a refused
	// connection is still reported).
	HideLostResponses bool
	// NegativeLimitGenericError rejects a negative limit with a plain MemoryAdapterError,
	// before looking at the filters, instead of UnsupportedMemoryQuery naming limit.
	NegativeLimitGenericError bool
	// LimitZeroRejected rejects limit 0 instead of answering [].
	LimitZeroRejected bool
	// FallbackOnCreationFailure silently uses an in-process store when the transport could
	// not be created.
	FallbackOnCreationFailure bool
	// IgnoreRejection returns the item's id when the service rejected the write.
	IgnoreRejection bool
	// IndexNeverVisible writes records flagged to stay out of the search index.
	IndexNeverVisible bool
}

// Adapter is the memory adapter over the fake transport. It is a correct ExternalStore
// unless an AdapterKnobs defect is switched on.
type Adapter struct {
	manifest memory.Manifest
	knobs    AdapterKnobs
	svc      *service
	dialErr  error
	reads    atomic.Int64
	fallback *localStore
}

var _ memory.ExternalStore = (*Adapter)(nil)

// Manifest implements memory.ExternalStore.
func (a *Adapter) Manifest() memory.Manifest {
	m := a.manifest
	if a.knobs.MutableManifest && a.reads.Add(1) > 1 {
		m.Adapter += "-changed"
	}
	return m
}

func (a *Adapter) unavailable(op string, err error) error {
	return memory.NewUnavailable("fake "+op, err)
}

// transportErr maps a native error: connection problems are MemoryAdapterUnavailable,
// service answers are MemoryAdapterError; the native error stays reachable.
func (a *Adapter) transportErr(op string, err error) error {
	if errors.Is(err, errRefused) || errors.Is(err, errReset) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return a.unavailable(op, err)
	}
	return memory.NewAdapterError("fake "+op, err)
}

// Store implements memory.Store.
func (a *Adapter) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	if a.useFallback() {
		return a.fallback.Store(ctx, item)
	}
	if item.ID == uuid.Nil {
		return uuid.Nil, memory.NewAdapterError("store: item id must not be the nil UUID", nil)
	}
	if !json.Valid(item.ContentJSON()) {
		return uuid.Nil, memory.NewAdapterError("store: content is not valid JSON", nil)
	}
	hasMeta := len(item.Metadata) > 0
	if a.knobs.RejectMetadata && hasMeta {
		return uuid.Nil, memory.NewAdapterError("store: this adapter does not persist metadata", nil)
	}
	r := record{
		Kind:    "memory",
		Key:     item.ID.String(),
		Body:    item.ContentJSON(),
		Labels:  slices.Clone(item.Tags),
		Ts:      item.CreatedAt,
		NoIndex: a.knobs.IndexNeverVisible,
	}
	if a.knobs.ContentFloat64 {
		r.Body = float64JSON(r.Body)
	}
	if a.knobs.DedupTags {
		var seen []string
		for _, t := range r.Labels {
			if !slices.Contains(seen, t) {
				seen = append(seen, t)
			}
		}
		r.Labels = seen
	}
	if hasMeta {
		r.Attrs = make(map[string]json.RawMessage, len(item.Metadata))
		for k, v := range item.Metadata {
			if !json.Valid(v) {
				return uuid.Nil, memory.NewAdapterError("store: metadata "+k+" is not valid JSON", nil)
			}
			r.Attrs[attrKey(k)] = v
		}
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return uuid.Nil, memory.NewAdapterError("store: encode record", err)
	}
	resp, err := a.svc.put(ctx, a.dialErr, payload)
	if err != nil {
		if a.hides(err) {
			return item.ID, nil
		}
		if a.knobs.IgnoreRejection && errors.Is(err, errRejected) {
			return item.ID, nil
		}
		return uuid.Nil, a.transportErr("store", err)
	}
	if a.knobs.RejectMetadataLate && hasMeta {
		return uuid.Nil, memory.NewAdapterError("store: this adapter does not persist metadata", nil)
	}
	var ack struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(resp, &ack); err != nil {
		return uuid.Nil, memory.NewAdapterError("store: malformed write response", err)
	}
	if ack.Key == "" {
		if !a.knobs.AcceptIdentityless {
			return uuid.Nil, memory.NewAdapterError("store: the service acknowledged the write without an identity", nil)
		}
	} else if ack.Key != item.ID.String() {
		return uuid.Nil, memory.NewAdapterError(fmt.Sprintf("store: the service acknowledged a different identity %q", ack.Key), nil)
	}
	if a.knobs.ReturnWrongID {
		return uuid.New(), nil
	}
	return item.ID, nil
}

// hides reports whether an adapter defect swallows this transport error.
func (a *Adapter) hides(err error) bool {
	return (a.knobs.HideOutage && (errors.Is(err, errRefused) || errors.Is(err, errReset))) ||
		(a.knobs.HideLostResponses && errors.Is(err, errReset))
}

func (a *Adapter) useFallback() bool {
	if a.dialErr != nil && a.knobs.FallbackOnCreationFailure {
		if a.fallback == nil {
			a.fallback = newLocalStore(a.manifest.SupportedFilters)
		}
		return true
	}
	return false
}

// project turns a native memory record into an Item.
func project(r record) (memory.Item, error) {
	id, err := memory.ParseID(r.Key)
	if err != nil {
		return memory.Item{}, err
	}
	if !json.Valid(r.Body) {
		return memory.Item{}, errors.New("record body is not JSON")
	}
	it := memory.Item{
		ID:        id,
		CreatedAt: r.Ts,
		Metadata:  map[string]json.RawMessage{},
		Content:   r.Body,
		Tags:      slices.Clone(r.Labels),
	}
	if it.Tags == nil {
		it.Tags = []string{}
	}
	for k, v := range r.Attrs {
		if name, ok := strings.CutPrefix(k, "md:"); ok {
			it.Metadata[name] = v
		}
	}
	return it, nil
}

// Retrieve implements memory.Store with the service's identity read.
func (a *Adapter) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if a.useFallback() {
		return a.fallback.Retrieve(ctx, id)
	}
	if a.knobs.RetrieveViaSearch {
		text := id.String()
		hits, err := a.Search(ctx, memory.Query{Text: &text, Limit: 1})
		if err != nil || len(hits) == 0 {
			return nil, err
		}
		return &hits[0], nil
	}
	raw, err := a.svc.get(ctx, a.dialErr, id.String())
	switch {
	case errors.Is(err, errNotFound):
		if a.knobs.UnknownAsEmptyItem {
			return &memory.Item{}, nil
		}
		return nil, nil
	case err != nil:
		if a.hides(err) {
			return nil, nil
		}
		return nil, a.transportErr("retrieve", err)
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		if a.knobs.PassMalformed {
			return &memory.Item{ID: id, Content: json.RawMessage("null")}, nil
		}
		return nil, memory.NewAdapterError("retrieve: malformed service payload", err)
	}
	if r.Kind != "memory" && !a.knobs.CoerceWrongKindRetrieve {
		return nil, nil
	}
	it, err := project(r)
	if err != nil {
		return nil, memory.NewAdapterError("retrieve: malformed record", err)
	}
	return &it, nil
}

// Search implements memory.Store: validation first, then one native search.
func (a *Adapter) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if a.useFallback() {
		return a.fallback.Search(ctx, q)
	}
	var earlyResp []byte
	var earlyErr error
	if a.knobs.ValidateAfterTransport && q.Limit != 0 {
		earlyResp, earlyErr = a.svc.search(ctx, a.dialErr, a.nativeQuery(q, q.Filters, max(q.Limit, 0)))
	}
	if a.knobs.NegativeLimitGenericError && q.Limit < 0 {
		return nil, memory.NewAdapterError("search: limit must not be negative", nil)
	}
	if a.knobs.LimitZeroRejected && q.Limit == 0 {
		return nil, memory.NewUnsupportedQuery("limit")
	}
	filters := maps.Clone(q.Filters)
	var rejected []string
	for k := range q.Filters {
		if !a.manifest.SupportsFilter(k) {
			if a.knobs.IgnoreUnsupportedFilters {
				delete(filters, k)
				continue
			}
			rejected = append(rejected, k)
		}
	}
	slices.Sort(rejected)
	if a.knobs.FirstKeyOnly && len(rejected) > 1 {
		rejected = rejected[:1]
	}
	if q.Limit < 0 && !a.knobs.NegativeLimitSlice && (!a.knobs.FirstKeyOnly || len(rejected) == 0) {
		rejected = append(rejected, "limit")
	}
	if len(rejected) > 0 {
		return nil, memory.NewUnsupportedQuery(rejected...)
	}
	limit := q.Limit
	if limit == 0 {
		switch {
		case a.knobs.LimitZeroDefault:
			limit = memory.DefaultLimit
		case a.knobs.SendLimitZero:
			_, _ = a.svc.search(ctx, a.dialErr, a.nativeQuery(q, filters, 0))
			return []memory.Item{}, nil
		default:
			return []memory.Item{}, nil
		}
	}
	resp, err := earlyResp, earlyErr
	if !a.knobs.ValidateAfterTransport {
		resp, err = a.svc.search(ctx, a.dialErr, a.nativeQuery(q, filters, limit))
	}
	if err != nil {
		if a.hides(err) {
			return []memory.Item{}, nil
		}
		return nil, a.transportErr("search", err)
	}
	var env searchResponse
	if err := json.Unmarshal(resp, &env); err != nil {
		if a.knobs.PassMalformed {
			return []memory.Item{{Content: json.RawMessage(`null`)}}, nil
		}
		return nil, memory.NewAdapterError("search: malformed service payload", err)
	}
	out := []memory.Item{}
	for _, raw := range env.Hits {
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, memory.NewAdapterError("search: malformed hit", err)
		}
		if r.Kind != "memory" && !a.knobs.CoerceWrongKindSearch {
			continue
		}
		it, err := project(r)
		if err != nil {
			return nil, memory.NewAdapterError("search: malformed hit", err)
		}
		out = append(out, it)
	}
	if a.knobs.LeakNativeRecords {
		out = append(out, memory.Item{ID: uuid.New(), Content: env.Stats, Metadata: map[string]json.RawMessage{}, Tags: []string{}})
	}
	return out, nil
}

// nativeQuery maps a portable query to the service's: text as is, tags as labels, each
// filter key k as attribute "md:k" with the value's compact JSON text.
func (a *Adapter) nativeQuery(q memory.Query, filters map[string]json.RawMessage, limit int) []byte {
	nq := nativeQuery{Text: q.Text, Labels: q.Tags, Max: limit}
	if a.knobs.LimitIgnored {
		nq.Max = 1 << 20
	}
	if a.knobs.EmptyQueryWildcard && (q.Text == nil || *q.Text == "") && len(q.Tags) == 0 && len(filters) == 0 {
		star := "*"
		nq.Text = &star
	}
	if len(filters) > 0 && !a.knobs.IgnoreSupportedFilter {
		nq.Where = map[string]string{}
		for k, v := range filters {
			nk := attrKey(k)
			if a.knobs.WrongFilterKey {
				nk = k
			}
			nv := compactJSON(v)
			if a.knobs.FilterValueAsText {
				b, _ := json.Marshal(textOf(v))
				nv = string(b)
			}
			nq.Where[nk] = nv
		}
	}
	b, _ := json.Marshal(nq)
	return b
}

func compactJSON(v json.RawMessage) string {
	// Marshaling a RawMessage compacts it without touching number literals.
	b, err := json.Marshal(v)
	if err != nil {
		return string(v)
	}
	return string(b)
}
