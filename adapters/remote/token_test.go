package remote_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// tokenServer is the real server behind a token set the test changes (as the adapter's
// accepted-tokens file changes during a rotation), recording what each data call presented
// and how many were refused.
type tokenServer struct {
	hs       *httptest.Server
	accepted atomic.Pointer[[][sha256.Size]byte]
	// refused counts the server's 401 answers; data counts /v1 calls other than the
	// manifest.
	refused, data atomic.Int64
	mu            sync.Mutex
	presented     map[string]int
}

// TokenDigests implements server.TokenSource.
func (s *tokenServer) TokenDigests() [][sha256.Size]byte { return *s.accepted.Load() }

// accept makes tokens the accepted set.
func (s *tokenServer) accept(tokens ...string) {
	d := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		d[i] = sha256.Sum256([]byte(t))
	}
	s.accepted.Store(&d)
}

// seen is how many calls presented "Bearer " + token.
func (s *tokenServer) seen(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.presented["Bearer "+token]
}

// newTokenServer starts the server over plain HTTP accepting tokens; startTLS, when set,
// starts it instead (for a certificate of the test's choosing).
func newTokenServer(t *testing.T, startTLS func(*httptest.Server), tokens ...string) *tokenServer {
	t.Helper()
	ts := &tokenServer{presented: map[string]int{}}
	ts.accept(tokens...)
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Tokens: ts})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	h := srv.Handler()
	ts.hs = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/manifest" {
			ts.data.Add(1)
		}
		ts.mu.Lock()
		ts.presented[r.Header.Get("Authorization")]++
		ts.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized {
			ts.refused.Add(1)
		}
	}))
	if startTLS != nil {
		startTLS(ts.hs)
	} else {
		ts.hs.Start()
	}
	t.Cleanup(ts.hs.Close)
	return ts
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// reloader is a TokenReloader whose change detection never sees a change: Token gives the
// token it was built with, ReloadToken what is on "disk" now.
type reloader struct {
	stale string
	disk  atomic.Pointer[string]
}

func newReloader(stale, disk string) *reloader {
	r := &reloader{stale: stale}
	r.disk.Store(&disk)
	return r
}

func (r *reloader) Token() (string, error) { return r.stale, nil }

func (r *reloader) ReloadToken() (string, error) {
	return *r.disk.Load(), nil
}

func TestTokenSource(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// source is the store's token source; the server accepts "old" and "new" until
		// the manifest is read, then accepts only "new".
		source func() remote.TokenSource
		// wantErr: the store call fails with 401 unauthorized.
		wantErr bool
		// wantData and wantRefused are the data calls the server saw and refused.
		wantData, wantRefused int64
	}{
		{
			name: "asked before every call",
			source: func() remote.TokenSource {
				var calls atomic.Int64
				return remote.TokenFunc(func() (string, error) {
					// The manifest is read with the first token, the store with the second.
					if calls.Add(1) == 1 {
						return "old", nil
					}
					return "new", nil
				})
			},
			wantData: 1,
		},
		{
			name:     "a 401 re-reads a reloader and retries once",
			source:   func() remote.TokenSource { return newReloader("old", "new") },
			wantData: 2, wantRefused: 1,
		},
		{
			name: "a 401 asks a plain source again and retries once when it changed",
			source: func() remote.TokenSource {
				var calls atomic.Int64
				return remote.TokenFunc(func() (string, error) {
					// Manifest, then the refused store, then the retry.
					if calls.Add(1) <= 2 {
						return "old", nil
					}
					return "new", nil
				})
			},
			wantData: 2, wantRefused: 1,
		},
		{
			name:    "a 401 with the same token after a reload is the answer, not retried",
			source:  func() remote.TokenSource { return newReloader("old", "old") },
			wantErr: true, wantData: 1, wantRefused: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, nil, "old", "new")
			st, err := remote.New(ctx, remote.Options{BaseURL: ts.hs.URL, TokenSource: tt.source()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			ts.accept("new")
			it := memory.NewItem([]byte(`"x"`), "t")
			_, err = st.Store(ctx, it)
			var pe *remote.ProblemError
			refused := errors.As(err, &pe) && pe.Problem.Type == memory.ProblemUnauthorized
			if tt.wantErr != refused || (!tt.wantErr && err != nil) {
				t.Fatalf("store: %v, want a 401: %t", err, tt.wantErr)
			}
			if got := ts.data.Load(); got != tt.wantData {
				t.Errorf("the server saw %d data calls, want %d", got, tt.wantData)
			}
			if got := ts.refused.Load(); got != tt.wantRefused {
				t.Errorf("the server refused %d calls, want %d", got, tt.wantRefused)
			}
			if !tt.wantErr {
				if got, err := st.Retrieve(ctx, it.ID); err != nil || got == nil {
					t.Fatalf("the item was not stored: %v %v", got, err)
				}
			}
		})
	}
}

func TestTokenSourceRules(t *testing.T) {
	ctx := context.Background()
	ts := newTokenServer(t, nil, "tk")
	if _, err := remote.New(ctx, remote.Options{BaseURL: ts.hs.URL, Token: "tk", TokenSource: remote.TokenFunc(func() (string, error) { return "tk", nil })}); !errors.Is(err, memory.ErrAdapter) {
		t.Errorf("Token and TokenSource together: %v, want MemoryAdapterError", err)
	}
	boom := errors.New("boom")
	_, err := remote.New(ctx, remote.Options{BaseURL: ts.hs.URL, TokenSource: remote.TokenFunc(func() (string, error) { return "", boom })})
	if !errors.Is(err, memory.ErrAdapter) || !errors.Is(err, boom) {
		t.Errorf("a failing source: %v, want MemoryAdapterError chaining its error", err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.presented) != 0 {
		t.Errorf("a failing source sent calls: %d kinds of Authorization", len(ts.presented))
	}
}
