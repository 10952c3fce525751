package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// FieldOwner is the server-side apply field manager of the objects the operator applies.
const FieldOwner = "memory-adapter-operator"

// BindingData is the binding Secret's content: the Service Binding specification's
// Provisioned Service keys, ca.crt (its convention for a CA) when the adapter serves TLS, and
// the tokens the adapter accepts, which only the adapter's own pods mount.
func BindingData(ma *memoryv1alpha1.MemoryAdapter, tokens TokenPlan, caPEM []byte) map[string][]byte {
	d := map[string][]byte{
		"type":            []byte("memory-adapter"),
		"provider":        []byte("agentmem"),
		"url":             []byte(ServiceURL(ma)),
		"token":           []byte(tokens.Current),
		AcceptedTokensKey: acceptedTokensFile(tokens.Accepted, ma.Spec.Access != nil, tokens.AccessLines),
	}
	if UsesTLS(ma) {
		d["ca.crt"] = caPEM
	}
	return d
}

// BindingApply is the binding Secret as the operator applies it: content, type, labels and
// the controller reference, so the garbage collector removes it with the adapter.
func BindingApply(ma *memoryv1alpha1.MemoryAdapter, tokens TokenPlan, caPEM []byte) *corev1ac.SecretApplyConfiguration {
	return OwnedSecretApply(ma, BindingName(ma)).
		WithType(BindingSecretType).
		WithData(BindingData(ma, tokens, caPEM))
}

// OwnedSecretApply is a Secret the adapter controls, with the operator's labels: what the
// manager's admission policy requires of every Secret it writes in an adapter's namespace.
func OwnedSecretApply(ma *memoryv1alpha1.MemoryAdapter, name string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, ma.Namespace).
		WithLabels(CommonLabels(ma)).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(memoryv1alpha1.GroupVersion.String()).
			WithKind("MemoryAdapter").
			WithName(ma.Name).
			WithUID(ma.UID).
			WithController(true).
			WithBlockOwnerDeletion(true))
}

// BindingDigest identifies what was applied, so an unchanged binding is not applied again.
func BindingDigest(ma *memoryv1alpha1.MemoryAdapter, tokens TokenPlan, caPEM []byte) string {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\x00%s\x00", ma.UID, BindingSecretType)
	data := BindingData(ma, tokens, caPEM)
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s=%x\x00", k, data[k])
	}
	labels := CommonLabels(ma)
	keys = keys[:0]
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s:%s\x00", k, labels[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
