package khivefake

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// Note is one stored khive note: a memory, or a record of another kind planted by a test.
type Note struct {
	ID          string         `json:"id"`
	Namespace   string         `json:"namespace"`
	Kind        string         `json:"kind"`
	Content     string         `json:"content"`
	Key         string         `json:"key,omitempty"`
	Properties  map[string]any `json:"properties,omitempty"`
	CreatedAtUS int64          `json:"created_at_us"`
	Indexed     bool           `json:"indexed"`
}

// Knobs switch the fake's failure modes. Each replays a documented khive behaviour.
type Knobs struct {
	// Eventual leaves new memories out of recall until MakeVisible (the ANN leg rebuilt in
	// the background; recall-pipeline.md). kg list is never delayed.
	Eventual bool `json:"eventual"`
	// Malformed corrupts every later get, list and recall answer (content not a string).
	Malformed bool `json:"malformed"`
	// IdentitylessNext makes the next memory.remember acknowledge without an id.
	IdentitylessNext bool `json:"identityless_next"`
	// RejectKeys makes memory.remember fail (ok:false, invalid_input) for these keys.
	RejectKeys []string `json:"reject_keys"`
	// HangOn makes the server stop answering when it receives this verb (the kill tests
	// then kill the process mid-call); HangMarker, if set, is a file created at that moment.
	HangOn     string `json:"hang_on"`
	HangMarker string `json:"hang_marker"`
	// ExitOn makes the server exit when it receives this verb, without answering.
	ExitOn string `json:"exit_on"`
}

// State is everything the fake keeps; it serializes to the --db file.
type State struct {
	Notes    []Note `json:"notes"`
	Knobs    Knobs  `json:"knobs"`
	Requests int64  `json:"requests"`
	ClockUS  int64  `json:"clock_us"`
}

// Backing holds a State that the server and a test harness share.
type Backing interface {
	// Update runs f on the state under a lock and keeps its changes unless it fails.
	Update(f func(*State) error) error
}

// Memory is an in-process Backing.
type Memory struct {
	mu sync.Mutex
	s  State
}

// Update implements Backing.
func (m *Memory) Update(f func(*State) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := cloneState(m.s)
	if err := f(&c); err != nil {
		return err
	}
	m.s = c
	return nil
}

func cloneState(s State) State {
	b, _ := json.Marshal(s)
	var c State
	_ = json.Unmarshal(b, &c)
	return c
}

// File is a Backing in a JSON file shared between processes (the fake child and the
// harness), serialized with flock on a lock file next to it.
type File struct {
	// Path is the state file; a missing file is an empty state.
	Path string
}

// Update implements Backing.
func (f File) Update(fn func(*State) error) error {
	lock, err := os.OpenFile(f.Path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("khivefake: lock: %w", err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("khivefake: lock: %w", err)
	}
	var s State
	b, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("khivefake: read state: %w", err)
	default:
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("khivefake: decode state: %w", err)
		}
	}
	if err := fn(&s); err != nil {
		return err
	}
	out, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := f.Path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return fmt.Errorf("khivefake: write state: %w", err)
	}
	return os.Rename(tmp, f.Path)
}
