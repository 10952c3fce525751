package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// A token file's limits. The bounds keep a file that is not a token file (a mounted key, a
// log) from being taken for one.
//
// With per-binding grants (Grant) the file holds one line per binding and rotation step: a
// rotation's three steps for up to 64 bindings and the adapter's own token fit in maxTokens.
const (
	maxTokens         = 256
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

// Grant is what one accepted token may do. The zero Grant is full access to the server's
// scope: a token without a grant reads and writes every item of it.
type Grant struct {
	// Digest is the SHA-256 digest of the token.
	Digest [sha256.Size]byte
	// ReadOnly refuses the token's stores with 403 forbidden; it may retrieve and search.
	ReadOnly bool
	// SubScope, when set, is the name of the sub-scope (memory.SubScope of the server's
	// scope) every data call made with the token works in: it sees no item of the scope or
	// of another sub-scope, and they see none of its.
	SubScope string
}

// GrantSource is a TokenSource whose tokens carry grants. The server asks on every request;
// the same rules as TokenDigests hold for the slice returned.
type GrantSource interface {
	TokenSource
	// Grants returns the grants of the tokens accepted now, one per token.
	Grants() []Grant
}

// matchGrant returns the grant of the presented token and whether any matched. Like
// tokenMatches it compares every digest without stopping, and picks the match without a
// branch on it, so the time taken shows neither which grant matched nor its options.
func matchGrant(presented []byte, grants []Grant) (Grant, bool) {
	sum := sha256.Sum256(presented)
	match, at := 0, 0
	for i := range grants {
		eq := subtle.ConstantTimeCompare(sum[:], grants[i].Digest[:])
		at = subtle.ConstantTimeSelect(eq, i, at)
		match |= eq
	}
	if match != 1 {
		return Grant{}, false
	}
	return grants[at], true
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

// digestPrefix marks a line that holds a token's SHA-256 digest (hex) instead of the token:
// the operator lists other bindings' tokens that way, so that the file, which bound
// workloads of the adapter's own binding may read, gives none of them another's token.
const digestPrefix = "sha256:"

// parseGrants reads one token a line, each optionally followed by options separated by
// spaces: "read-only", and "sub-scope=NAME". A line may give the token's digest instead
// (digestPrefix). Its errors never quote the file, which holds secrets.
func parseGrants(b []byte) ([]Grant, error) {
	var grants []Grant
	for i, line := range bytes.Split(b, []byte("\n")) {
		fields := bytes.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case len(fields[0]) > maxTokenBytes:
			return nil, fmt.Errorf("line %d: a token is longer than %d bytes", i+1, maxTokenBytes)
		case len(grants) == maxTokens:
			return nil, fmt.Errorf("more than %d tokens", maxTokens)
		}
		g, err := grantOf(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		grants = append(grants, g)
	}
	if len(grants) == 0 {
		return nil, errNoToken
	}
	return grants, nil
}

// grantOf reads one line's fields: the token or its digest, then the options.
func grantOf(fields [][]byte) (Grant, error) {
	var g Grant
	if hexDigest, ok := bytes.CutPrefix(fields[0], []byte(digestPrefix)); ok {
		if len(hexDigest) != 2*sha256.Size {
			return g, fmt.Errorf("a digest must be %d hex digits", 2*sha256.Size)
		}
		if _, err := hex.Decode(g.Digest[:], hexDigest); err != nil {
			return g, errors.New("a digest must be hex")
		}
	} else {
		g.Digest = sha256.Sum256(fields[0])
	}
	for _, opt := range fields[1:] {
		switch name, value, _ := bytes.Cut(opt, []byte("=")); string(name) {
		case "read-only":
			if g.ReadOnly || len(value) > 0 {
				return g, errors.New("option read-only takes no value and is given once")
			}
			g.ReadOnly = true
		case "sub-scope":
			if g.SubScope != "" {
				return g, errors.New("option sub-scope is given twice")
			}
			if memory.CheckSubScopeName(string(value)) != nil {
				// Not quoted: a line run together with the next could put a token here.
				return g, fmt.Errorf("option sub-scope: want 1 to %d characters matching %s", memory.MaxSubScopeLength, memory.SubScopePattern)
			}
			g.SubScope = string(value)
		default:
			// The option is not a secret, but a mistyped line could be a token run together
			// with its option: quote neither.
			return g, errors.New("unknown option (want read-only or sub-scope=NAME)")
		}
	}
	return g, nil
}

// readTokens returns the file's grants and the stamp of the very file it read (a kubelet swap
// may replace the path between a stat and an open). The stamp is set whenever the file
// opened, also when its content is refused, so that a refused version is not read again.
func readTokens(path string) ([]Grant, fileStamp, error) {
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
	grants, err := parseGrants(b)
	if err != nil {
		return nil, stamp, fmt.Errorf("token file %s: %w", path, err)
	}
	return grants, stamp, nil
}

// ReadTokenFile returns the grants of a token file (see TokenFile), for checks made once at
// start.
func ReadTokenFile(path string) ([]Grant, error) {
	grants, _, err := readTokens(path)
	return grants, err
}

func digestsOf(grants []Grant) [][sha256.Size]byte {
	d := make([][sha256.Size]byte, len(grants))
	for i := range grants {
		d[i] = grants[i].Digest
	}
	return d
}

// TokenFile is a GrantSource that reads a file holding the accepted tokens, one a line with
// its options (parseGrants; blank lines ignored, at most maxTokens tokens of at most 512
// bytes), and reads it again when it
// changes, so that the operator rotates a token by rewriting the mounted Secret (the kubelet
// swaps its files in place) without restarting the server. It looks at the file at most once
// a second, like CertificateFiles, and a version it refuses (unreadable, empty because caught
// between two writes, over the limits) leaves the previous set in force.
type TokenFile struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	grants  []Grant
	digests [][sha256.Size]byte
	stamp   fileStamp
	checked time.Time
}

// LoadTokenFile reads the file once, failing if it holds no acceptable token, so a server
// never starts with an empty set. A nil log discards.
func LoadTokenFile(path string, log *slog.Logger) (*TokenFile, error) {
	grants, stamp, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &TokenFile{path: path, log: log, now: time.Now, grants: grants, digests: digestsOf(grants), stamp: stamp}
	f.checked = f.now()
	return f, nil
}

// TokenDigests implements TokenSource.
func (f *TokenFile) TokenDigests() [][sha256.Size]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh()
	return f.digests
}

// Grants implements GrantSource.
func (f *TokenFile) Grants() []Grant {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh()
	return f.grants
}

// refresh re-reads the file when a look is due and the file changed. Each change is logged
// once, whether it was taken or refused; a token never is. f.mu is held.
func (f *TokenFile) refresh() {
	if !recheckDue(&f.checked, f.now()) {
		return
	}
	if fi, err := os.Stat(f.path); err == nil && stampOf(fi) == f.stamp {
		return
	}
	grants, stamp, err := readTokens(f.path)
	if stamp == f.stamp {
		// Either the version already read (changed back between the stat and the open) or,
		// with a zero stamp, a file that is still missing: reported already.
		return
	}
	f.stamp = stamp
	if err != nil {
		f.log.Warn("Keeping the previous bearer tokens", "file", f.path, "tokens", len(f.grants), "error", err)
		return
	}
	f.grants, f.digests = grants, digestsOf(grants)
	f.log.Info("Read a changed bearer token file", "file", f.path, "tokens", len(f.grants))
}
