package khive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// HarnessOptions configure NewHarness.
type HarnessOptions struct {
	// Command and Args start the MCP server (a kkernel, or the khivefake binary); the harness
	// appends "--db <disposable file>" so that every store it makes shares one database.
	Command string
	Args    []string
	// Env is passed to every store's child.
	Env []string
	// InProcess serves khivefake through pipes instead of starting Command.
	InProcess bool
	// Dir is where the disposable directory is created; empty means os.TempDir().
	Dir string
	// AdapterID is passed to every store.
	AdapterID string
}

// Harness is the conformance harness over a disposable database file and a fresh random
// namespace per Reset. Against a real kkernel it offers the base harness only; against
// khivefake (recognised by its MCP serverInfo name) NewHarness returns a *FakeHarness that
// also controls the fake through its state file, behind the adapter's back.
//
// MakeTransportUnavailable kills every child the harness's stores run and points new
// stores at a command path that does not exist, so the next call really fails to start the
// server; Reset restores the path.
type Harness struct {
	opts    HarnessOptions
	base    string
	db      string
	backing khivefake.Backing // in-process only

	mu     sync.Mutex
	ns     string
	cut    bool
	stores []*Store
	closed bool
}

// FakeHarness is a Harness over khivefake with every optional capability the matrix uses.
type FakeHarness struct {
	*Harness
	b khivefake.Backing
}

var (
	_ conformance.Harness            = (*Harness)(nil)
	_ conformance.ServiceVersioner   = (*Harness)(nil)
	_ conformance.WrongKindMaker     = (*FakeHarness)(nil)
	_ conformance.WriteRejecter      = (*FakeHarness)(nil)
	_ conformance.TransportObserver  = (*FakeHarness)(nil)
	_ conformance.MalformedResponder = (*FakeHarness)(nil)
	_ conformance.IdentitylessWriter = (*FakeHarness)(nil)
)

// NewHarness creates the disposable directory and checks, with one store, that the server
// starts; it returns a *FakeHarness when the server is khivefake.
func NewHarness(ctx context.Context, opts HarnessOptions) (conformance.Harness, error) {
	base, err := os.MkdirTemp(opts.Dir, "mao-khive-conformance-")
	if err != nil {
		return nil, fmt.Errorf("khive harness: %w", err)
	}
	h := &Harness{opts: opts, base: base, db: filepath.Join(base, "khive.db"), ns: disposableNamespace()}
	if opts.InProcess {
		h.backing = &khivefake.Memory{}
	}
	s, err := h.newStore()
	if err == nil {
		var ev memory.Evidence
		ev, err = s.Probe(ctx)
		_ = s.Close()
		if err == nil && strings.HasPrefix(ev.ServiceVersion, khivefake.ServerName+" ") {
			b := h.backing
			if b == nil {
				b = khivefake.File{Path: h.db}
			}
			return &FakeHarness{Harness: h, b: b}, nil
		}
	}
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, fmt.Errorf("khive harness: %w", err)
	}
	return h, nil
}

func disposableNamespace() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "conformance-" + hex.EncodeToString(b[:])
}

// Namespace returns the current disposable namespace.
func (h *Harness) Namespace() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ns
}

func (h *Harness) newStore() (*Store, error) {
	o := Options{Namespace: h.ns, AdapterID: h.opts.AdapterID, Env: h.opts.Env}
	if h.backing != nil {
		b := h.backing
		ns := h.ns
		cut := h.cut
		o.Dialer = func(context.Context) (Transport, error) {
			if cut {
				return nil, errors.New("khive harness: transport cut")
			}
			return khivefake.Pipe(&khivefake.Server{Backing: b, Namespace: ns}), nil
		}
	} else {
		o.Command = h.opts.Command
		if h.cut {
			o.Command = filepath.Join(h.base, "cut", "unreachable-kkernel")
		}
		o.Args = append(slices.Clone(h.opts.Args), "--db", h.db)
		if h.opts.Args == nil {
			o.Args = append(DefaultArgs(), "--db", h.db)
		}
	}
	return New(o)
}

// MakeStore returns a new store over the current namespace.
func (h *Harness) MakeStore(context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("khive harness: closed")
	}
	s, err := h.newStore()
	if err != nil {
		return nil, err
	}
	h.stores = append(h.stores, s)
	return s, nil
}

// Reset moves to a fresh namespace and restores the transport.
func (h *Harness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = false
	h.ns = disposableNamespace()
	return nil
}

// MakeSearchIndexVisible returns at once against a real kkernel: kg list (the empty query)
// reads the note table directly and text recall's FTS leg is written with the note.
func (h *Harness) MakeSearchIndexVisible(context.Context) error { return nil }

// MakeTransportUnavailable kills the children and makes new ones unstartable until Reset.
func (h *Harness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	h.cut = true
	stores := slices.Clone(h.stores)
	h.mu.Unlock()
	for _, s := range stores {
		s.killChild()
	}
	// Stores keep their dialer; a store made before the cut would restart its child on the
	// next call, so the cut also reaches them through their options.
	for _, s := range stores {
		s.mu.Lock()
		if h.backing != nil {
			s.opts.Dialer = func(context.Context) (Transport, error) { return nil, errors.New("khive harness: transport cut") }
		} else {
			s.opts.Dialer = ProcessDialer(filepath.Join(h.base, "cut", "unreachable-kkernel"), s.opts.Args, s.opts.Env)
		}
		s.mu.Unlock()
	}
	return nil
}

// killChild ends the current child (as a crash would); the store stays open.
func (s *Store) killChild() {
	s.mu.Lock()
	c := s.c
	s.c = nil
	s.mu.Unlock()
	if c != nil {
		_ = c.close()
	}
}

// Close closes every store and deletes the disposable directory. It is idempotent.
func (h *Harness) Close(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for _, s := range h.stores {
		errs = append(errs, s.Close())
	}
	errs = append(errs, os.RemoveAll(h.base))
	return errors.Join(errs...)
}

// ServiceVersion returns the server's MCP serverInfo name and version.
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	h.mu.Lock()
	s, err := h.newStore()
	h.mu.Unlock()
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close() }()
	ev, err := s.Probe(ctx)
	if err != nil {
		return "", err
	}
	return ev.ServiceVersion, nil
}

// Reset also clears the fake's knobs, so one case's failure mode never leaks into the next.
func (h *FakeHarness) Reset(ctx context.Context) error {
	if err := h.Harness.Reset(ctx); err != nil {
		return err
	}
	return h.b.Update(func(st *khivefake.State) error {
		st.Knobs = khivefake.Knobs{}
		return nil
	})
}

// MakeSearchIndexVisible indexes every note the fake holds.
func (h *FakeHarness) MakeSearchIndexVisible(context.Context) error {
	return khivefake.MakeVisible(h.b)
}

// RequestCount returns the number of tools/call requests the fake received.
func (h *FakeHarness) RequestCount() int64 {
	var n int64
	_ = h.b.Update(func(st *khivefake.State) error { n = st.Requests; return nil })
	return n
}

// MakeWrongKindRecord plants a note of kind "message" under a fresh key in the namespace,
// the shape kg get returns for any note kind (get.rs); it resolves to the returned id.
func (h *FakeHarness) MakeWrongKindRecord(context.Context) (uuid.UUID, error) {
	id := uuid.New()
	ns := h.Namespace()
	err := h.b.Update(func(st *khivefake.State) error {
		st.Notes = append(st.Notes, khivefake.Note{
			ID: uuid.NewString(), Namespace: ns, Kind: "message", Key: id.String(),
			Content:     `{"memory_adapter":1,"id":"` + id.String() + `","content":"not a memory"}`,
			Properties:  map[string]any{"memory_type": "semantic", "tags": []string{"conformance"}},
			CreatedAtUS: st.ClockUS + 1, Indexed: true,
		})
		st.ClockUS++
		return nil
	})
	return id, err
}

// MakeWriteRejected makes the fake refuse memory.remember for the returned item's key.
func (h *FakeHarness) MakeWriteRejected(context.Context) (memory.Item, error) {
	it := memory.NewItem(json.RawMessage(`{"rejected":"by the fake's policy"}`), "conformance")
	return it, h.b.Update(func(st *khivefake.State) error {
		st.Knobs.RejectKeys = append(st.Knobs.RejectKeys, it.ID.String())
		return nil
	})
}

// MakeResponsesMalformed makes every later read answer carry non-string content.
func (h *FakeHarness) MakeResponsesMalformed(context.Context) error {
	return h.b.Update(func(st *khivefake.State) error { st.Knobs.Malformed = true; return nil })
}

// MakeNextWriteIdentityless makes the next memory.remember answer lack its id.
func (h *FakeHarness) MakeNextWriteIdentityless(context.Context) error {
	return h.b.Update(func(st *khivefake.State) error { st.Knobs.IdentitylessNext = true; return nil })
}

// SetKnobs replaces the fake's knobs (tests use it for Eventual, HangOn and ExitOn).
func (h *FakeHarness) SetKnobs(k khivefake.Knobs) error {
	return h.b.Update(func(st *khivefake.State) error { st.Knobs = k; return nil })
}
