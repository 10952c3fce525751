package server

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/internal/server/tokentest"
)

func TestParseGrants(t *testing.T) {
	long := strings.Repeat("x", maxTokenBytes)
	d := func(tok string) [sha256.Size]byte { return sha256.Sum256([]byte(tok)) }
	hexOf := func(tok string) string { h := d(tok); return fmt.Sprintf("%x", h[:]) }
	many := strings.Repeat("t\n", maxTokens)
	for name, tc := range map[string]struct {
		file string
		want []Grant // nil: refused
	}{
		"one token":                   {"tok\n", []Grant{{Digest: d("tok")}}},
		"one token without a newline": {"tok", []Grant{{Digest: d("tok")}}},
		"two tokens":                  {"current\nnext\n", []Grant{{Digest: d("current")}, {Digest: d("next")}}},
		"whitespace and blank lines":  {"\n  a \r\n\n\tb\t\n \n", []Grant{{Digest: d("a")}, {Digest: d("b")}}},
		"a token of the largest size": {long + "\n", []Grant{{Digest: d(long)}}},
		"the most tokens":             {many, nil},
		"read-only":                   {"a read-only\n", []Grant{{Digest: d("a"), ReadOnly: true}}},
		"a sub-scope":                 {"a sub-scope=planner\n", []Grant{{Digest: d("a"), SubScope: "planner"}}},
		"both options, any order":     {"a sub-scope=p.q read-only\n", []Grant{{Digest: d("a"), ReadOnly: true, SubScope: "p.q"}}},
		"a digest":                    {"sha256:" + hexOf("secret") + " read-only\n", []Grant{{Digest: d("secret"), ReadOnly: true}}},
		"empty":                       {"", nil},
		"only whitespace":             {" \n\t\r\n\n", nil},
		"one token too many":          {many + "u\n", nil},
		"a token over the size":       {"a\n" + long + "x\n", nil},
		"an unknown option":           {"a xxxx\n", nil},
		"read-only with a value":      {"a read-only=xxxx\n", nil},
		"read-only twice":             {"a read-only read-only\n", nil},
		"an invalid sub-scope":        {"a sub-scope=XXXX\n", nil},
		"an empty sub-scope":          {"a sub-scope=\n", nil},
		"two sub-scopes":              {"a sub-scope=b sub-scope=c\n", nil},
		"a short digest":              {"sha256:abcd\n", nil},
		"a digest that is not hex":    {"sha256:" + strings.Repeat("xx", sha256.Size) + "\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseGrants([]byte(tc.file))
			if name == "the most tokens" {
				if err != nil || len(got) != maxTokens {
					t.Fatalf("%d grants, %v; want %d", len(got), err, maxTokens)
				}
				return
			}
			if tc.want == nil {
				if err == nil {
					t.Fatalf("accepted %+v", got)
				}
				if strings.Contains(err.Error(), "xxxx") || strings.Contains(err.Error(), "XXXX") {
					t.Errorf("the error quotes the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("grants %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestMatchGrant: the grant of the token presented, whichever its position; none for a
// token not listed.
func TestMatchGrant(t *testing.T) {
	grants := []Grant{
		{Digest: sha256.Sum256([]byte("rw"))},
		{Digest: sha256.Sum256([]byte("ro")), ReadOnly: true},
		{Digest: sha256.Sum256([]byte("sub")), SubScope: "planner"},
	}
	for tok, want := range map[string]Grant{"rw": grants[0], "ro": grants[1], "sub": grants[2]} {
		if got, ok := matchGrant([]byte(tok), grants); !ok || got != want {
			t.Errorf("matchGrant(%q) = %+v, %v; want %+v", tok, got, ok, want)
		}
	}
	if got, ok := matchGrant([]byte("other"), grants); ok {
		t.Errorf("matchGrant(other) = %+v, true", got)
	}
	if _, ok := matchGrant([]byte("rw"), nil); ok {
		t.Error("matchGrant with no grants matched")
	}
}

func TestTokenMatches(t *testing.T) {
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	for name, tc := range map[string]struct {
		presented string
		accepted  [][sha256.Size]byte
		want      bool
	}{
		"the only token":           {"a", [][sha256.Size]byte{a}, true},
		"the first of two":         {"a", [][sha256.Size]byte{a, b}, true},
		"the second of two":        {"b", [][sha256.Size]byte{a, b}, true},
		"another token":            {"c", [][sha256.Size]byte{a, b}, false},
		"a prefix":                 {"", [][sha256.Size]byte{a}, false},
		"nothing accepted":         {"a", nil, false},
		"the same token twice":     {"a", [][sha256.Size]byte{a, a}, true},
		"a longer token than kept": {"aa", [][sha256.Size]byte{a}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tokenMatches([]byte(tc.presented), tc.accepted); got != tc.want {
				t.Errorf("tokenMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

// secretVolume lays out a file the way the kubelet mounts a Secret key: name -> ..data/name,
// ..data -> a timestamped directory; an update writes a new directory and renames a new
// ..data link over the old one, so the file changes in one step.
type secretVolume struct {
	t       *testing.T
	dir     string
	version int
	mtime   time.Time
}

func newSecretVolume(t *testing.T, content string) (*secretVolume, string) {
	t.Helper()
	v := &secretVolume{t: t, dir: t.TempDir(), mtime: time.Now()}
	v.update(content)
	if err := os.Symlink(filepath.Join("..data", "token"), filepath.Join(v.dir, "token")); err != nil {
		t.Fatal(err)
	}
	return v, filepath.Join(v.dir, "token")
}

func (v *secretVolume) update(content string) {
	v.t.Helper()
	v.version++
	ts := fmt.Sprintf("..2026_12_04_13_00_%02d.%d", v.version, v.version)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		v.t.Fatal(err)
	}
	f := filepath.Join(v.dir, ts, "token")
	if err := os.WriteFile(f, []byte(content), 0o400); err != nil {
		v.t.Fatal(err)
	}
	// Tokens of one length make files of one size; a coarse file system clock could give
	// two versions one mtime. Set the times apart so the test checks the reload.
	v.mtime = v.mtime.Add(time.Minute)
	if err := os.Chtimes(f, v.mtime, v.mtime); err != nil {
		v.t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
}

// overwrite writes the current version's file in place, as a writer that is not the kubelet
// would, to catch the server between two writes.
func (v *secretVolume) overwrite(content string) {
	v.t.Helper()
	f := filepath.Join(v.dir, "token")
	if err := os.Chmod(f, 0o600); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		v.t.Fatal(err)
	}
	v.mtime = v.mtime.Add(time.Minute)
	if err := os.Chtimes(f, v.mtime, v.mtime); err != nil {
		v.t.Fatal(err)
	}
}

// fakeClock is the injectable clock the recheck interval is measured on.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// pastRecheck moves the clock beyond the recheck interval, so the next ask looks at the file.
func (c *fakeClock) pastRecheck() { c.now = c.now.Add(recheckEvery + time.Millisecond) }

func loadWithClock(t *testing.T, path string, log *slog.Logger) (*TokenFile, *fakeClock) {
	t.Helper()
	tf, err := LoadTokenFile(path, log)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now()}
	tf.now, tf.checked = clock.Now, clock.now
	return tf, clock
}

// accepted lists which of the candidates the file's current set accepts.
func accepted(tf *TokenFile, candidates ...string) string {
	d := tf.TokenDigests()
	var got []string
	for _, c := range candidates {
		if tokenMatches([]byte(c), d) {
			got = append(got, c)
		}
	}
	return strings.Join(got, ",")
}

func TestTokenFileFollowsAKubeletSwap(t *testing.T) {
	vol, path := newSecretVolume(t, "token-a\n")
	tf, clock := loadWithClock(t, path, nil)
	if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-a" {
		t.Fatalf("accepts %q, want the file's one token", got)
	}

	vol.update("token-a\ntoken-b\ntoken-c\n")
	if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-a" {
		t.Fatalf("looked at the file again within the recheck interval (accepts %q)", got)
	}
	clock.pastRecheck()
	if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-a,token-b,token-c" {
		t.Fatalf("accepts %q after the swap, want all three", got)
	}

	vol.update("token-b\ntoken-c\n")
	clock.pastRecheck()
	if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-b,token-c" {
		t.Fatalf("accepts %q after token-a was removed, want token-b,token-c", got)
	}
}

func TestTokenFileKeepsThePreviousSetAndSaysSoOncePerChange(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	vol, path := newSecretVolume(t, "token-a\ntoken-b\n")
	tf, clock := loadWithClock(t, path, log)

	for name, content := range map[string]string{
		"empty, caught between two writes": "",
		"blank lines only":                 "\n \n",
		"too many tokens":                  strings.Repeat("token-c\n", maxTokens+1),
		"an unknown option":                "token-c read-write\n",
		"a token over the size":            "token-c\n" + strings.Repeat("y", maxTokenBytes+1) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			logs.Reset()
			vol.overwrite(content)
			for range 3 {
				clock.pastRecheck()
				if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-a,token-b" {
					t.Fatalf("accepts %q, want the previous set", got)
				}
			}
			if n := strings.Count(logs.String(), "Keeping the previous bearer tokens"); n != 1 {
				t.Errorf("logged the refused file %d times, want once:\n%s", n, logs.String())
			}
			if strings.Contains(logs.String(), "token-") || strings.Contains(logs.String(), "yyyy") {
				t.Errorf("the log carries a token:\n%s", logs.String())
			}
		})
	}

	// The write completes: the set it holds is taken.
	logs.Reset()
	vol.overwrite("token-c\n")
	clock.pastRecheck()
	if got := accepted(tf, "token-a", "token-b", "token-c"); got != "token-c" {
		t.Fatalf("accepts %q after the write completed, want token-c", got)
	}
	if !strings.Contains(logs.String(), "Read a changed bearer token file") || strings.Contains(logs.String(), "token-c") {
		t.Errorf("want one line about the new set, without the token:\n%s", logs.String())
	}

	// A file that disappears is one change too: logged once, the set kept.
	logs.Reset()
	if err := os.Remove(filepath.Join(vol.dir, "token")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		clock.pastRecheck()
		if got := accepted(tf, "token-c"); got != "token-c" {
			t.Fatalf("accepts %q with the file gone, want the previous set", got)
		}
	}
	if n := strings.Count(logs.String(), "Keeping the previous bearer tokens"); n != 1 {
		t.Errorf("logged the missing file %d times, want once:\n%s", n, logs.String())
	}
}

func TestLoadTokenFileRefusesAFileWithoutAcceptableTokens(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":           "",
		"whitespace":      " \n\n",
		"too many tokens": strings.Repeat("a\n", maxTokens+1),
		"a long token":    strings.Repeat("z", maxTokenBytes+1),
		"over 64 KiB":     strings.Repeat("\n", maxTokenFileBytes) + "a",
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadTokenFile(f, nil); err == nil {
				t.Fatal("loaded")
			} else if strings.Contains(err.Error(), "zzz") {
				t.Errorf("the error quotes the file: %v", err)
			}
			if _, err := ReadTokenFile(f); err == nil {
				t.Fatal("ReadTokenFile read it")
			}
		})
	}
	if _, err := LoadTokenFile(filepath.Join(dir, "empty"), nil); !errors.Is(err, errNoToken) {
		t.Errorf("an empty file: %v, want errNoToken", err)
	}
	if _, err := LoadTokenFile(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}

// TestServerFollowsARotatedTokenFile drives the real handler over HTTP: a token added to the
// file is accepted and a removed one gets 401, with no new server in between.
func TestServerFollowsARotatedTokenFile(t *testing.T) {
	vol, path := newSecretVolume(t, "token-a\n")
	tf, clock := loadWithClock(t, path, nil)
	srv, err := New(Config{Store: inmemory.New(inmemory.Options{}), Tokens: tf})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	expect := func(step string, want map[string]int) {
		t.Helper()
		for authorization, code := range want {
			if got := tokentest.Status(t, hs.Client(), hs.URL, authorization); got != code {
				t.Errorf("%s: %q answered %d, want %d", step, authorization, got, code)
			}
		}
	}

	expect("one token", map[string]int{
		"Bearer token-a": 200, "bearer token-a": 200, "Bearer token-b": 401, "": 401,
		"Basic token-a": 401, "token-a": 401, "Bearer": 401,
	})
	vol.update("token-a\ntoken-b\n")
	clock.pastRecheck()
	expect("token-b added", map[string]int{"Bearer token-a": 200, "Bearer token-b": 200, "Basic token-b": 401})
	vol.update("token-b\n")
	clock.pastRecheck()
	expect("token-a removed", map[string]int{"Bearer token-a": 401, "Bearer token-b": 200})
}

func TestNewRefusesTokenWithTokens(t *testing.T) {
	_, err := New(Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("a"), Tokens: fixedToken([]byte("b"))})
	if err == nil {
		t.Error("New took both a fixed token and a token source")
	}
}
