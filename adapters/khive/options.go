package khive

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivedeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the default stable implementation id published in the manifest.
const AdapterID = "khive"

// DefaultCommand and DefaultArgs start khive's MCP server the way khive's own clients do
// (lionagi's khive_injection.py: {"command": "kkernel", "args": ["mcp"]}).
const DefaultCommand = khivedeploy.Command

// DefaultArgs are the child's arguments when Options.Args is nil.
func DefaultArgs() []string { return []string{"mcp"} }

// Timeouts and bounds. docs/adapters/khive.md explains each choice.
const (
	// DefaultStartTimeout bounds starting the child and the MCP handshake (initialize and
	// tools/list). kkernel opens its SQLite database and loads its packs before answering;
	// twenty seconds covers a cold start on a loaded node without hiding a child that hangs.
	DefaultStartTimeout = khivedeploy.StartTimeout
	// DefaultRequestTimeout bounds one tools/call. khive's own recall deadline is 30 s
	// (KHIVE_MEMORY_RECALL_DEADLINE_MS, khive-runtime/src/error.rs); five seconds more lets
	// khive's typed DeadlineExceeded arrive before the adapter gives up on the call.
	DefaultRequestTimeout = khivedeploy.RequestTimeout
	// DefaultMaxResponseBytes bounds one JSON-RPC response line. The largest legitimate
	// answer is a 200-note list page (kg list's cap) of items near memory.MaxItemBytes; 64 MiB
	// leaves room for a page of large items while bounding what a broken child can make the
	// adapter buffer.
	DefaultMaxResponseBytes = 64 << 20
	// MaxListPage is kg list's page-size cap (khive-pack-kg/src/handlers/list.rs).
	MaxListPage = 200
	// MaxRecallLimit is the largest recall limit the adapter asks for (pack.rs: top_k "max
	// 100"). A larger query limit still gets at most this many ranked hits.
	MaxRecallLimit = 100
	// maxListPages bounds one empty-text search's paging through kg list (200 notes a page),
	// so foreign notes in the namespace cannot make one call scan without end.
	maxListPages = 64
)

// Options configure New.
type Options struct {
	// Command is the khive MCP server binary; empty means DefaultCommand, looked up in PATH.
	Command string
	// Args are the child's arguments; nil means DefaultArgs. The adapter appends
	// "--namespace <Namespace>" unless Args already names a namespace.
	Args []string
	// Env is added to the adapter's own environment for the child. The adapter always adds
	// KHIVE_NO_DAEMON=1 (docs/adapters/khive.md, "Process lifecycle") unless Env sets it.
	Env []string
	// Namespace is the khive namespace holding this adapter's memories (the MemoryAdapter's
	// scope). It is fixed for the store's lifetime and must pass memory.CheckScope.
	Namespace string
	// AdapterID is the manifest's adapter id; empty means AdapterID.
	AdapterID string
	// StartTimeout overrides DefaultStartTimeout when positive.
	StartTimeout time.Duration
	// RequestTimeout overrides DefaultRequestTimeout when positive.
	RequestTimeout time.Duration
	// MaxResponseBytes overrides DefaultMaxResponseBytes when positive.
	MaxResponseBytes int
	// MaxItemBytes overrides memory.MaxItemBytes when positive.
	MaxItemBytes int
	// Dialer replaces the child process (tests serve the fake in-process through pipes).
	// When set, Command, Args and Env are unused.
	Dialer Dialer
}

func (o Options) withDefaults() (Options, error) {
	if err := memory.CheckScope(o.Namespace); err != nil {
		return o, fmt.Errorf("khive: namespace: %w", err)
	}
	if o.Command == "" {
		o.Command = DefaultCommand
	}
	if o.Args == nil {
		o.Args = DefaultArgs()
	}
	o.Args = slices.Clone(o.Args)
	if !slices.ContainsFunc(o.Args, func(a string) bool { return a == "--namespace" || len(a) > 12 && a[:12] == "--namespace=" }) {
		o.Args = append(o.Args, "--namespace", o.Namespace)
	}
	if !slices.ContainsFunc(o.Env, func(e string) bool { return len(e) >= 16 && e[:16] == "KHIVE_NO_DAEMON=" }) {
		o.Env = append(slices.Clone(o.Env), "KHIVE_NO_DAEMON=1")
	}
	if o.AdapterID == "" {
		o.AdapterID = AdapterID
	}
	if len(o.AdapterID) > memory.MaxAdapterIDLength {
		return o, errors.New("khive: adapter id too long")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxItemBytes <= 0 {
		o.MaxItemBytes = memory.MaxItemBytes
	}
	if o.Dialer == nil {
		o.Dialer = ProcessDialer(o.Command, o.Args, o.Env)
	}
	return o, nil
}

// Manifest is the manifest every khive store publishes under adapterID. The conformance
// matrix decided it (docs/adapters/khive.md, "Manifest"): khive assigns created_at itself
// and memory.remember takes no metadata, so both are dropped; kg get returns id, content and
// tags exactly; recall hits carry no tags, and the list path strips them so that every hit
// agrees; a new memory's vector-index entry is built in the background, so search is
// eventual. khive has no filter on arbitrary metadata, so no filter key is supported.
func Manifest(adapterID string) memory.Manifest {
	return memory.Manifest{
		Adapter:           adapterID,
		NativeItemFields:  []memory.ItemField{memory.FieldID, memory.FieldContent, memory.FieldTags},
		DroppedItemFields: []memory.ItemField{memory.FieldCreatedAt, memory.FieldMetadata},
		SupportedFilters:  []string{},
		SearchConsistency: memory.ConsistencyEventual,
		RetrieveFidelity:  memory.FidelityNativeFields,
		SearchFidelity:    memory.FidelityNativeFields,
		SearchReturnsTags: false,
		PreservesMetadata: false,
	}.Normalize()
}
