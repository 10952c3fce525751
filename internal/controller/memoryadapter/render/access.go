package render

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// VerificationSubScope is the sub-scope the adapter's own token works in, read-only, once
// spec.access is set: the token the operator reads evidence with and the conformance Job
// checks the deployed server with, and what a pod bound before access was set still holds.
// Two dots make it a name no ServiceAccount can have, so no grant shares it, and read-only
// keeps it empty.
const VerificationSubScope = "mao..operator"

// AccessBindingName is the binding Secret of one ServiceAccount of spec.access. The adapter
// name has no dot, so the part before the first dot names the adapter, and no two adapters'
// Secrets can collide.
func AccessBindingName(adapter, serviceAccount string) string {
	return adapter + "-binding." + serviceAccount
}

// DeriveAccessToken is a ServiceAccount's token for a rotation: DeriveToken's HMAC with the
// ServiceAccount's name as a further input, so every ServiceAccount's token differs from the
// adapter's and from every other's, and a rotation renews them all.
func DeriveAccessToken(key []byte, ma *memoryv1alpha1.MemoryAdapter, rotation, serviceAccount string) string {
	m := hmac.New(sha256.New, key)
	_, _ = fmt.Fprintf(m, "memory-adapter-access-token/v1\x00%s\x00%s\x00%s\x00%s\x00%s", ma.Namespace, ma.Name, ma.UID, rotation, serviceAccount)
	return hex.EncodeToString(m.Sum(nil))
}

// accessCheckPrefix starts the name the check token is derived for; the dots make it a name
// no ServiceAccount can have.
const accessCheckPrefix = "mao..check."

// AccessToken is one ServiceAccount's token for its binding Secret.
type AccessToken struct {
	// ServiceAccount is the grant's ServiceAccount.
	ServiceAccount string
	// Token is its token of the binding's current rotation.
	Token string
}

// accessPlan fills the plan's access part from spec.access: each listed ServiceAccount's
// current token, and the adapter's token file lines for every rotation it accepts (the
// ServiceAccounts' tokens by digest, so the file gives no workload another's token).
func accessPlan(key []byte, ma *memoryv1alpha1.MemoryAdapter, p *TokenPlan, rotations []string) {
	if ma.Spec.Access == nil {
		return
	}
	grants := make([]memoryv1alpha1.ServiceAccountAccess, len(ma.Spec.Access.ServiceAccounts))
	copy(grants, ma.Spec.Access.ServiceAccounts)
	sort.Slice(grants, func(i, j int) bool { return grants[i].Name < grants[j].Name })
	defer func() {
		// The check token is a function of every line before it, so only the file that
		// lists exactly these grants accepts it.
		sum := sha256.Sum256([]byte(strings.Join(p.AccessLines, "\n")))
		p.AccessCheck = DeriveAccessToken(key, ma, p.Status.Rotation, accessCheckPrefix+hex.EncodeToString(sum[:8]))
		p.AccessLines = append(p.AccessLines, p.AccessCheck+" read-only sub-scope="+VerificationSubScope)
		for _, g := range grants {
			p.AccessNames = append(p.AccessNames, g.Name)
		}
	}()
	for _, g := range grants {
		p.Access = append(p.Access, AccessToken{ServiceAccount: g.Name, Token: DeriveAccessToken(key, ma, p.Status.Rotation, g.Name)})
		for _, rot := range rotations {
			sum := sha256.Sum256([]byte(DeriveAccessToken(key, ma, rot, g.Name)))
			line := "sha256:" + hex.EncodeToString(sum[:])
			if g.Rights == memoryv1alpha1.AccessReadOnly {
				line += " read-only"
			}
			if g.SubScope != "" {
				line += " sub-scope=" + g.SubScope
			}
			p.AccessLines = append(p.AccessLines, line)
		}
	}
}

// AccessBindingData is a ServiceAccount's binding Secret: the Service Binding keys with its
// own token, and ca.crt when the adapter serves TLS. It holds no other token.
func AccessBindingData(ma *memoryv1alpha1.MemoryAdapter, t AccessToken, caPEM []byte) map[string][]byte {
	d := map[string][]byte{
		"type":     []byte("memory-adapter"),
		"provider": []byte("agentmem"),
		"url":      []byte(ServiceURL(ma)),
		"token":    []byte(t.Token),
	}
	if UsesTLS(ma) {
		d["ca.crt"] = caPEM
	}
	return d
}

// AccessBindingApply is a ServiceAccount's binding Secret as the operator applies it.
func AccessBindingApply(ma *memoryv1alpha1.MemoryAdapter, t AccessToken, caPEM []byte) *corev1ac.SecretApplyConfiguration {
	return OwnedSecretApply(ma, AccessBindingName(ma.Name, t.ServiceAccount)).
		WithType(BindingSecretType).
		WithData(AccessBindingData(ma, t, caPEM))
}

// GovernanceArgs are serve's (and conformance's) access-control, retention and quota flags
// from spec.access, spec.retention and spec.quota; none when all are omitted, so an adapter
// without them renders as before. They make the server claim
// MemoryAdapter.GovernanceClaim in its manifest.
func GovernanceArgs(ma *memoryv1alpha1.MemoryAdapter) []string {
	var args []string
	if ma.Spec.Access != nil {
		// The manifest claims the grants spec.access makes (governance/v1).
		args = append(args, "--access-control")
	}
	if r := ma.Spec.Retention; r != nil {
		if r.MaxAge != nil {
			args = append(args, "--retention-max-age", r.MaxAge.Or(0).String())
		}
		if r.MaxItems != nil {
			args = append(args, "--retention-max-items", strconv.FormatInt(*r.MaxItems, 10))
		}
		if r.SweepPeriod != nil {
			args = append(args, "--retention-sweep-period", r.SweepPeriod.Or(0).String())
		}
	}
	if q := ma.Spec.Quota; q != nil {
		if q.MaxItems != nil {
			args = append(args, "--quota-max-items", strconv.FormatInt(*q.MaxItems, 10))
		}
		if q.MaxBytes != nil {
			args = append(args, "--quota-max-bytes", strconv.FormatInt(*q.MaxBytes, 10))
		}
		if q.WritesPerSecond != nil {
			args = append(args, "--quota-write-rate", strconv.Itoa(int(*q.WritesPerSecond)))
		}
		if q.WriteBurst != nil {
			args = append(args, "--quota-write-burst", strconv.Itoa(int(*q.WriteBurst)))
		}
	}
	return args
}
