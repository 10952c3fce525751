package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// A token file's limits. Two tokens are what a rotation needs (the current one and the one
// it replaces or is replaced by); the room above that is slack, not a use. The bounds keep a
// file that is not a token file (a mounted key, a log) from being taken for one.
const (
	maxTokens         = 4
	maxTokenBytes     = 512
	maxTokenFileBytes = 64 << 10
)

// TokenSource supplies the bearer tokens a Server accepts on its /v1 routes. The server asks
// on every request, so a source may change its answer (a rotated Secret) while the server
// runs. TokenFile is the one the adapter binary uses.
type TokenSource interface {
	// TokenDigests returns the SHA-256 digests of the tokens accepted now. The server only
	// reads the slice; a source that changes its set returns a new slice rather than
	// writing into one it handed out.
	TokenDigests() [][sha256.Size]byte
}

// fixedTokens is Config.Token's source: one token for the server's life.
type fixedTokens [][sha256.Size]byte

func (f fixedTokens) TokenDigests() [][sha256.Size]byte { return f }

func fixedToken(token []byte) fixedTokens { return fixedTokens{sha256.Sum256(token)} }

// tokenMatches compares digests, not tokens, so a token's length does not show in the time
// taken; and it compares against every accepted digest without stopping at a match, so the
// time does not show which one matched either.
func tokenMatches(presented []byte, accepted [][sha256.Size]byte) bool {
	sum := sha256.Sum256(presented)
	match := 0
	for i := range accepted {
		match |= subtle.ConstantTimeCompare(sum[:], accepted[i][:])
	}
	return match == 1
}

// errNoToken is a token file without a token: a new file, or one caught between two writes.
var errNoToken = errors.New("no token in the file")

// parseTokens reads one token a line. Its errors never quote the file, which holds secrets.
func parseTokens(b []byte) ([][]byte, error) {
	var tokens [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		tok := bytes.TrimSpace(line)
		switch {
		case len(tok) == 0:
			continue
		case len(tok) > maxTokenBytes:
			return nil, fmt.Errorf("line %d: a token is longer than %d bytes", i+1, maxTokenBytes)
		case len(tokens) == maxTokens:
			return nil, fmt.Errorf("more than %d tokens", maxTokens)
		}
		tokens = append(tokens, tok)
	}
	if len(tokens) == 0 {
		return nil, errNoToken
	}
	return tokens, nil
}

// readTokens returns the file's tokens and the stamp of the very file it read (a kubelet swap
// may replace the path between a stat and an open). The stamp is set whenever the file
// opened, also when its content is refused, so that a refused version is not read again.
func readTokens(path string) ([][]byte, fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("token file: %w", err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("token file: %w", err)
	}
	stamp := stampOf(fi)
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return nil, stamp, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxTokenFileBytes {
		return nil, stamp, fmt.Errorf("token file %s: larger than %d bytes", path, maxTokenFileBytes)
	}
	tokens, err := parseTokens(b)
	if err != nil {
		return nil, stamp, fmt.Errorf("token file %s: %w", path, err)
	}
	return tokens, stamp, nil
}

// ReadTokenFile returns the tokens in a token file (see TokenFile), for checks made once at
// start.
func ReadTokenFile(path string) ([][]byte, error) {
	tokens, _, err := readTokens(path)
	return tokens, err
}

func digestsOf(tokens [][]byte) [][sha256.Size]byte {
	d := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		d[i] = sha256.Sum256(t)
	}
	return d
}

// TokenFile is a TokenSource that reads a file holding the accepted tokens, one a line
// (blank lines ignored, at most 4 tokens of at most 512 bytes), and reads it again when it
// changes, so that the operator rotates a token by rewriting the mounted Secret (the kubelet
// swaps its files in place) without restarting the server. It looks at the file at most once
// a second, like CertificateFiles, and a version it refuses (unreadable, empty because caught
// between two writes, over the limits) leaves the previous set in force.
type TokenFile struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	digests [][sha256.Size]byte
	stamp   fileStamp
	checked time.Time
}

// LoadTokenFile reads the file once, failing if it holds no acceptable token, so a server
// never starts with an empty set. A nil log discards.
func LoadTokenFile(path string, log *slog.Logger) (*TokenFile, error) {
	tokens, stamp, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &TokenFile{path: path, log: log, now: time.Now, digests: digestsOf(tokens), stamp: stamp}
	f.checked = f.now()
	return f, nil
}

// TokenDigests implements TokenSource, re-reading the file first when a look is due and the
// file changed. Each change is logged once, whether it was taken or refused; a token never is.
func (f *TokenFile) TokenDigests() [][sha256.Size]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !recheckDue(&f.checked, f.now()) {
		return f.digests
	}
	if fi, err := os.Stat(f.path); err == nil && stampOf(fi) == f.stamp {
		return f.digests
	}
	tokens, stamp, err := readTokens(f.path)
	if stamp == f.stamp {
		// Either the version already read (changed back between the stat and the open) or,
		// with a zero stamp, a file that is still missing: reported already.
		return f.digests
	}
	f.stamp = stamp
	if err != nil {
		f.log.Warn("Keeping the previous bearer tokens", "file", f.path, "tokens", len(f.digests), "error", err)
		return f.digests
	}
	f.digests = digestsOf(tokens)
	f.log.Info("Read a changed bearer token file", "file", f.path, "tokens", len(f.digests))
	return f.digests
}
