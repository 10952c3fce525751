package render

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// MinTokenKeyBytes is the shortest operator key accepted for deriving adapter tokens.
const MinTokenKeyBytes = 32

// AcceptedTokensKey is the binding Secret key the adapter's server reads its accepted tokens
// from, one per line: the binding's token, and during a rotation the next or the previous
// one. Bound workloads use "token"; only the adapter needs the list.
const AcceptedTokensKey = "accepted-tokens"

// defaultTokenGrace is spec.token.gracePeriodSeconds when omitted (the CRD defaults it too;
// this covers objects written before the field existed).
const defaultTokenGrace = 600 * time.Second

// DeriveToken is an adapter's bearer token for a rotation: an HMAC of the adapter's identity
// and the rotation under the operator's key. Deriving it, rather than generating and storing
// it, is what lets the operator write the binding Secret without any right to read Secrets
// back: the token is recomputed on every reconcile, and a recreated adapter (new UID) gets a
// new one. The empty rotation keeps the input the operator has always used, so an adapter
// that never rotates keeps its token across the operator's upgrade.
func DeriveToken(key []byte, ma *memoryv1alpha1.MemoryAdapter, rotation string) string {
	m := hmac.New(sha256.New, key)
	// NUL separators: no namespace, name, UID or rotation contains one, so no two
	// identities collide.
	_, _ = fmt.Fprintf(m, "memory-adapter-token/v1\x00%s\x00%s\x00%s", ma.Namespace, ma.Name, ma.UID)
	if rotation != "" {
		_, _ = fmt.Fprintf(m, "\x00%s", rotation)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// TokenPlan is the binding's tokens at one step of a rotation.
type TokenPlan struct {
	// Current is the binding's token: what workloads, the conformance Job and the operator's
	// own evidence reads present.
	Current string
	// Next is the token the adapter pods are being given before the binding switches to it;
	// empty when no rotation is pending.
	Next string
	// Accepted is what the adapter accepts, current first.
	Accepted []string
	// Status is where the rotation stands after this step.
	Status *memoryv1alpha1.TokenStatus
	// Switched is set when this step moved the binding to a new token.
	Switched bool
	// RecheckAfter is when the plan changes by itself (the previous token expires); 0 if never.
	RecheckAfter time.Duration
	// Access is each ServiceAccount's token of spec.access, sorted by name; nil without it.
	Access []AccessToken
	// AccessLines are the adapter's token file lines of spec.access's grants, after its own
	// tokens: every accepted rotation's token of each ServiceAccount, by digest, with its
	// rights and sub-scope.
	AccessLines []string
	// AccessCheck is a token only a token file of exactly these grants accepts (its last
	// line, read-only in VerificationSubScope): an evidence read with it that succeeds on
	// every pod proves every pod enforces them. Empty without spec.access.
	AccessCheck string
	// AccessNames are the ServiceAccounts of spec.access, sorted.
	AccessNames []string
}

// PlanTokens moves an adapter's token rotation one step. The order is what keeps every
// client working: the adapter first accepts the next token beside the current one; only
// once every pod accepts it (nextAccepted, the prober's reads with it) does the binding
// switch, keeping the old token accepted for the grace period, long enough for the kubelet
// to bring bound pods the new Secret. Status is where the step is remembered, since the
// operator never reads the Secret: a status lost starts from the spec's rotation, with no
// grace for an older token, which errs toward refusing it.
func PlanTokens(key []byte, ma *memoryv1alpha1.MemoryAdapter, nextAccepted string, serving bool, now time.Time) TokenPlan {
	desired, grace := requestedRotation(ma.Spec.Token)
	st := rotationSoFar(ma.Status.Token, desired)
	if desired == "" {
		// No rotation asked for (or the field removed): keep whatever token is current.
		desired = st.Rotation
	}
	dropExpiredPrevious(st, now)
	p := TokenPlan{Status: st}
	switch {
	case desired == st.Rotation:
		st.PendingRotation = "" // a rotation taken back before it switched
	case st.PendingRotation != desired:
		st.PendingRotation = desired
	case !serving || nextAccepted == DeriveToken(key, ma, desired):
		// Every serving pod accepts the next token (or none serves, and a pod that starts
		// reads the list as it stands): workloads may have it.
		switchRotation(st, desired, grace, now)
		p.Switched = true
	}
	var rotations []string
	p.Current, p.Next, p.Accepted, rotations = tokensOf(key, ma, st)
	accessPlan(key, ma, &p, rotations)
	if st.PreviousExpiresAt != nil {
		p.RecheckAfter = st.PreviousExpiresAt.Sub(now)
	}
	return p
}

// requestedRotation is the rotation spec.token asks for ("" for none) and the grace the
// binding's previous token keeps after a switch.
func requestedRotation(t *memoryv1alpha1.TokenSpec) (rotation string, grace time.Duration) {
	if t == nil {
		return "", defaultTokenGrace
	}
	if t.GracePeriodSeconds == nil {
		return t.Rotation, defaultTokenGrace
	}
	return t.Rotation, time.Duration(*t.GracePeriodSeconds) * time.Second
}

// rotationSoFar is a copy of the adapter's token status, so that planning never writes into
// the object the caller holds. With no status the adapter is taken to run the requested
// rotation already: whether it was created with it or its status was lost, no older token
// is known to be held, so none is kept.
func rotationSoFar(st *memoryv1alpha1.TokenStatus, requested string) *memoryv1alpha1.TokenStatus {
	if st == nil {
		return &memoryv1alpha1.TokenStatus{Rotation: requested}
	}
	return st.DeepCopy()
}

// dropExpiredPrevious forgets the previous rotation once its grace is over, so that the
// adapter stops accepting its token.
func dropExpiredPrevious(st *memoryv1alpha1.TokenStatus, now time.Time) {
	if st.PreviousExpiresAt != nil && !now.Before(st.PreviousExpiresAt.Time) {
		st.PreviousRotation, st.PreviousExpiresAt = "", nil
	}
}

// switchRotation moves the binding to the pending rotation. The old token stays accepted for
// the grace, the time the kubelet needs to bring bound pods the new Secret; a zero grace
// refuses it at once. Times are whole seconds, as status stores them.
func switchRotation(st *memoryv1alpha1.TokenStatus, desired string, grace time.Duration, now time.Time) {
	st.PreviousRotation, st.PreviousExpiresAt = st.Rotation, nil
	if grace > 0 {
		st.PreviousExpiresAt = &metav1.Time{Time: now.Add(grace).Truncate(time.Second)}
	}
	st.Rotation, st.PendingRotation = desired, ""
	st.RotatedAt = &metav1.Time{Time: now.Truncate(time.Second)}
}

// tokensOf derives the tokens a rotation status names: the binding's, the pending one, and
// what the adapter accepts, current first, with the rotations accepted in the same order.
func tokensOf(key []byte, ma *memoryv1alpha1.MemoryAdapter, st *memoryv1alpha1.TokenStatus) (current, next string, accepted, rotations []string) {
	current = DeriveToken(key, ma, st.Rotation)
	accepted, rotations = []string{current}, []string{st.Rotation}
	if st.PendingRotation != "" {
		next = DeriveToken(key, ma, st.PendingRotation)
		accepted, rotations = append(accepted, next), append(rotations, st.PendingRotation)
	}
	// Going back to the previous rotation inside its grace makes the next token the
	// previous one; it is listed once.
	if st.PreviousExpiresAt != nil {
		if prev := DeriveToken(key, ma, st.PreviousRotation); prev != next {
			accepted, rotations = append(accepted, prev), append(rotations, st.PreviousRotation)
		}
	}
	return current, next, accepted, rotations
}

// acceptedTokensFile is the accepted-tokens key's content: one token a line, then the
// grants of spec.access. With spec.access the adapter's own tokens are read-only in
// VerificationSubScope: they are the operator's and the conformance Job's, and a pod that
// holds one from before access was set gets nothing of the scope from it.
func acceptedTokensFile(tokens []string, access bool, accessLines []string) []byte {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(t)
		if access {
			b.WriteString(" read-only sub-scope=" + VerificationSubScope)
		}
		b.WriteByte('\n')
	}
	for _, l := range accessLines {
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}
