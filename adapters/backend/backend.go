package backend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// The calls a retry policy applies to, in the order of Config.Retry and of the commands'
// --retry-<call> flags.
const (
	// CallStore is a store call.
	CallStore = "store"
	// CallRetrieve is a retrieve call.
	CallRetrieve = "retrieve"
	// CallSearch is a search call.
	CallSearch = "search"
)

// Calls lists the calls in Config.Retry's order.
var Calls = [3]string{CallStore, CallRetrieve, CallSearch}

// Backend is everything the operator and the memory-adapter binary know about one backend.
// The operator-side fields are data and pure functions of spec.backend; the binary-side ones
// open the backend. A backend the operator never deploys (the in-memory reference store)
// leaves Type empty; one the binary never opens (External, the user's own server) leaves
// Open nil.
type Backend struct {
	// Name is the --backend value, lower case, and the name of the backend's page,
	// docs/adapters/<Name>.md.
	Name string
	// Type is the spec.backend.type the operator deploys this backend for.
	Type memoryv1alpha1.BackendType

	// Lifecycle is the adapter's documented lifecycle (ADR-0093 D4): status.lifecycle for
	// every field spec.lifecycle leaves out.
	Lifecycle memoryv1alpha1.LifecycleSpec
	// UserDescribed marks a backend whose lifecycle the user describes (a server the user
	// brings): spec.lifecycle may state any value. For the others, the fields that describe
	// the adapter (connectionCreation, concurrencySafe, duplicateIdBehaviour) may only repeat
	// Lifecycle's.
	UserDescribed bool
	// RepeatedCalls names the calls (CallStore, ...) the adapter repeats after a failure: only
	// for these does a retry policy of more than one attempt reach it.
	RepeatedCalls []string
	// DuplicateID is what the backend does with an item stored under an existing id
	// (conformance.DuplicateOverwrite, ...), which its harness publishes; empty leaves it
	// undeclared.
	DuplicateID string
	// ImageRequired, when set, says why spec.image must name an image: the operator's own
	// adapter image lacks a part of this backend. The operator refuses a spec without one.
	ImageRequired string
	// DataVolume, when set, keeps the backend's database in a volume the adapter owns; nil
	// for a backend on a shared server.
	DataVolume *DataVolume
	// ConnectionArgs are the serve and conformance flags rendered from spec.backend's
	// connection options; they follow the flags every backend gets.
	ConnectionArgs func(spec *memoryv1alpha1.BackendSpec) []string
	// Args are the further serve and conformance flags rendered from spec.backend. dataDir is
	// where the data volume is mounted for serve, or "" for a conformance Job, whose harness
	// works in a disposable scope of its own under /tmp.
	Args func(spec *memoryv1alpha1.BackendSpec, dataDir string) []string
	// Env is environment the adapter and its conformance Jobs need beyond the connection.
	Env []corev1.EnvVar

	// Purges says that a deleted adapter's scope is purged from its shared server by a Job
	// running the binary's Purge (the operator renders that Job for deletionPolicy Delete).
	// Register sets it for an entry with a Purge; Provide refuses a Purge it does not declare.
	Purges bool

	// Runtime is the binary's side, set by Provide (or given to Register whole); the manager
	// links only the operator's side and leaves it zero.
	Runtime
}

// Runtime is what the memory-adapter binary needs to run a backend: its flags, and how to open
// it, its conformance harness and its purge. It lives in the backend's own package, beside its
// driver, so that the operator's manager, which reads only the operator's side, links no
// driver (docs/development.md, "Adding a backend").
type Runtime struct {
	// Flags registers the backend's own command-line flags on fs, each named
	// "<Name>-<option>", and returns where their values land; nil when it has none.
	Flags func(fs *pflag.FlagSet) Options
	// ProductionFlags are those of the backend's flags that point at production data;
	// harness mode refuses them, so a harness reset can never empty a real scope.
	ProductionFlags []string
	// Open returns the store serve publishes.
	Open func(ctx context.Context, c Config) (memory.ExternalStore, error)
	// Harness returns a live conformance harness over a disposable scope with the same
	// configuration.
	Harness func(ctx context.Context, c Config) (conformance.Harness, error)
	// Purge deletes every item of c.Scope, and nothing of another scope, from a shared
	// server; nil when the items go with the adapter's own volume or the backend has no
	// server of its own. The operator runs it before it lets an adapter with deletionPolicy
	// Delete go.
	Purge func(ctx context.Context, c Config) (PurgeResult, error)
}

// DataVolume is a backend's database volume: a claim with one writer, mounted into the
// adapter's pod, whose pods are recreated (never two at once) and stay on its node.
type DataVolume struct {
	// Storage returns the claim's requested size ("" for the default) and storage class from
	// spec.backend, and the field the size comes from, which errors name.
	Storage func(spec *memoryv1alpha1.BackendSpec) (size string, class *string, field string)
}

// Config is what a command hands a backend once its command line is checked.
type Config struct {
	// Scope is --scope. For Open, "" means the scope "default"; for Harness, a fresh
	// disposable scope.
	Scope string
	// AdapterID is the manifest's adapter id; "" keeps the backend's own.
	AdapterID string
	// Filters is the manifest's filter key set; nil keeps the backend's default.
	Filters []string
	// Connection is the connection string with the backend's overrides applied. It is a
	// secret: never log it, never quote it in an error.
	Connection string
	// RequestTimeout bounds one backend call; 0 keeps the backend's documented default.
	RequestTimeout time.Duration
	// Retry holds the policies of Calls, in that order; a zero policy keeps the backend's.
	Retry [3]memory.RetryPolicy
	// PodName is the pod's name (the Deployment sets $POD_NAME); "" outside a pod.
	PodName string
	// Options is what the backend's Flags returned, validated; nil when it has none.
	Options Options
}

// ScopeOrDefault is Scope, or "default" when it is empty.
func (c Config) ScopeOrDefault() string {
	if c.Scope == "" {
		return "default"
	}
	return c.Scope
}

// PurgeResult counts what a purge deleted.
type PurgeResult struct {
	// Items is how many memory items were deleted.
	Items int64
	// Keys is, for a key-value server, how many keys were removed: the items and the
	// scope's own keys.
	Keys int64
}

// Options are a backend's own command-line flags.
type Options interface {
	// Validate checks the flags' values once they are parsed.
	Validate() error
	// ApplyConnection returns conn with the flags that override parts of it applied. Its
	// errors never quote conn.
	ApplyConnection(conn string) (string, error)
}

// UsageError is a backend's refusal of its command line or configuration: the commands exit
// with status 2 on it, as on any usage error of their own.
type UsageError struct{ msg string }

// Error returns the refusal.
func (e *UsageError) Error() string { return e.msg }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Repeats reports whether the adapter repeats call after a failure.
func (b *Backend) Repeats(call string) bool { return slices.Contains(b.RepeatedCalls, call) }

// DocumentedLifecycle returns a copy of Lifecycle the caller may change.
func (b *Backend) DocumentedLifecycle() memoryv1alpha1.LifecycleSpec { return *b.Lifecycle.DeepCopy() }

var (
	mu     sync.RWMutex
	byName = map[string]*Backend{}
	byType = map[memoryv1alpha1.BackendType]*Backend{}
)

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// Register adds b to the table. A backend's package calls it from an init function: the
// operator's side alone (the binary's side following through Provide), or both at once; it
// panics on an entry that could never work (no name, a name or type taken, nothing to run),
// since that is a mistake in the program, found the first time it starts.
func Register(b Backend) {
	b.Purges = b.Purges || b.Purge != nil
	if err := check(&b); err != nil {
		panic(fmt.Sprintf("backend.Register(%q): %v", b.Name, err))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, taken := byName[b.Name]; taken {
		panic(fmt.Sprintf("backend.Register(%q): the name is registered twice", b.Name))
	}
	if _, taken := byType[b.Type]; taken && b.Type != "" {
		panic(fmt.Sprintf("backend.Register(%q): type %s is registered twice", b.Name, b.Type))
	}
	entry := &b
	byName[b.Name] = entry
	if b.Type != "" {
		byType[b.Type] = entry
	}
}

// Provide adds the binary's side to the entry Register made under name. The backend's own
// package calls it from an init function, after importing the package that registered the
// operator's side (so Go runs that registration first). It panics, as Register does, on a
// name not registered, a second Provide, an Open without a Harness, or a Purge the entry
// does not declare (Purges) or a declared one missing: the operator would render a purge Job
// the binary cannot run, or none for a scope only a purge removes.
func Provide(name string, r Runtime) {
	mu.Lock()
	defer mu.Unlock()
	b, ok := byName[name]
	switch {
	case !ok:
		panic(fmt.Sprintf("backend.Provide(%q): no entry: import the package that registers it", name))
	case b.Open != nil:
		panic(fmt.Sprintf("backend.Provide(%q): the binary's side is provided twice", name))
	case r.Open == nil:
		panic(fmt.Sprintf("backend.Provide(%q): no Open", name))
	case b.Purges != (r.Purge != nil):
		panic(fmt.Sprintf("backend.Provide(%q): the entry says Purges=%v but the runtime has %s", name, b.Purges, map[bool]string{true: "a Purge", false: "none"}[r.Purge != nil]))
	}
	withRuntime := *b
	withRuntime.Runtime = r
	if err := check(&withRuntime); err != nil {
		panic(fmt.Sprintf("backend.Provide(%q): %v", name, err))
	}
	// The entry is changed in place: ForType and Lookup hand out the same pointer.
	b.Runtime = r
}

// check refuses an entry with a bad name or nothing to run.
func check(b *Backend) error {
	switch {
	case !namePattern.MatchString(b.Name):
		return errors.New("the name must be lower-case letters and digits, starting with a letter")
	case b.Type == "" && b.Open == nil:
		return errors.New("neither a Type the operator deploys nor an Open the binary runs")
	case (b.Open == nil) != (b.Harness == nil):
		return errors.New("an Open needs a Harness and a Harness an Open: every backend the binary serves is judged by the matrix")
	case b.Purge != nil && b.Open == nil:
		return errors.New("a Purge needs an Open: the purge Job runs the binary that serves the backend")
	}
	for _, c := range b.RepeatedCalls {
		if !slices.Contains(Calls[:], c) {
			return fmt.Errorf("RepeatedCalls: %q is not a call", c)
		}
	}
	return nil
}

// Lookup returns the backend registered under the --backend name.
func Lookup(name string) (*Backend, bool) {
	mu.RLock()
	defer mu.RUnlock()
	b, ok := byName[name]
	return b, ok
}

// ForType returns the backend the operator deploys for a spec.backend.type.
func ForType(t memoryv1alpha1.BackendType) (*Backend, bool) {
	mu.RLock()
	defer mu.RUnlock()
	b, ok := byType[t]
	return b, ok
}

// Runnable returns the backends the binary can open, sorted by name.
func Runnable() []*Backend {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]*Backend, 0, len(byName))
	for _, b := range byName {
		if b.Open != nil {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b *Backend) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Types returns the registered spec.backend.type values, sorted.
func Types() []memoryv1alpha1.BackendType {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]memoryv1alpha1.BackendType, 0, len(byType))
	for t := range byType {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
