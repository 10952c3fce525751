package gate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/agentmem/memory-adapter-operator/api/requirements"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter"
	"github.com/agentmem/memory-adapter-operator/internal/webhook"
)

// Event reasons on gated pods.
const (
	// ReasonWaitingForAdapter: the pod stays gated; the note says why.
	ReasonWaitingForAdapter = "WaitingForAdapter"
	// ReasonAdapterReady: the gate was removed.
	ReasonAdapterReady = "AdapterReady"
)

// verdict is the decision for one gated pod.
type verdict struct {
	// release is true when the gate may be removed.
	release bool
	// message says why the pod stays gated, or what released it; deterministic, so that an
	// unchanged situation gives an unchanged message and no new Event.
	message string
}

// boundPod is what the policy reads of a gated pod.
type boundPod struct {
	// requires is the pod's requires annotation.
	requires string
	// serviceAccount is the ServiceAccount it runs as.
	serviceAccount string
	// secret is the binding Secret the webhook mounted.
	secret string
}

// decide is the whole gating policy. ma is the named adapter, nil when it does not exist.
func decide(name string, ma *memoryv1alpha1.MemoryAdapter, pod boundPod) verdict {
	requires := pod.requires
	reqs, err := requirements.Parse(requires)
	if err != nil {
		return verdict{message: "the requirement list no longer parses: " + err.Error()}
	}
	if ma == nil {
		return verdict{message: fmt.Sprintf("MemoryAdapter %q does not exist in this namespace yet", name)}
	}
	// Each reason is a predicate of the adapter, joined into one sentence about it.
	var why []string
	available := meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable)
	switch {
	case available == nil:
		why = append(why, "has no Available condition yet")
	case available.Status != "True":
		why = append(why, fmt.Sprintf("is not Available (%s)", available.Reason))
	case verifiedHash(ma) == "":
		// Available implies a passing run of this manifest; a status that says otherwise is
		// read as not verified rather than trusted.
		why = append(why, "has no passing conformance run of its manifest")
	}
	// spec.manifest is immutable, so the manifest a passing run verified (status.conformance
	// carries its hash) is spec.manifest; before a run passes, the same manifest says early
	// which requirements this adapter can never meet.
	if unmet := reqs.Unmet(ma.PublishedManifest()); len(unmet) > 0 {
		why = append(why, "does not meet: "+strings.Join(unmet, "; "))
	}
	why = append(why, accessReasons(name, ma, pod)...)
	if len(why) > 0 {
		return verdict{message: fmt.Sprintf("MemoryAdapter %q %s", name, strings.Join(why, " and "))}
	}
	return verdict{release: true, message: fmt.Sprintf("MemoryAdapter %q is Available and its verified manifest (%s) meets every requirement", name, verifiedHash(ma))}
}

// verifiedHash returns the manifest hash a passing conformance run verified, or "".
func verifiedHash(ma *memoryv1alpha1.MemoryAdapter) string {
	if r := memoryadapter.VerifiedRun(ma); r != nil {
		return r.ManifestHash
	}
	return ""
}

// accessReasons say why spec.access holds the pod: its ServiceAccount is not listed, the pod
// mounts another binding Secret than its ServiceAccount's now is (it was created before the
// adapter, or before spec.access changed: only a new pod can mount another Secret), or the
// adapter's pods do not enforce its grant yet (status.access).
func accessReasons(name string, ma *memoryv1alpha1.MemoryAdapter, pod boundPod) []string {
	want := webhook.BindingSecretFor(name, pod.serviceAccount, ma.Spec.Access)
	var why []string
	if a := ma.Spec.Access; a != nil && !slices.ContainsFunc(a.ServiceAccounts, func(g memoryv1alpha1.ServiceAccountAccess) bool { return g.Name == pod.serviceAccount }) {
		why = append(why, fmt.Sprintf("grants ServiceAccount %q no access (spec.access lists %s)", pod.serviceAccount, listedAccounts(a)))
	} else if ma.Spec.Access != nil && (ma.Status.Access == nil || !slices.Contains(ma.Status.Access.ServiceAccounts, pod.serviceAccount)) {
		why = append(why, fmt.Sprintf("does not enforce ServiceAccount %q's grant on every adapter pod yet", pod.serviceAccount))
	}
	if pod.secret != want {
		why = append(why, fmt.Sprintf("binds ServiceAccount %q with Secret %s, but the pod mounts %s (created before its adapter or before spec.access changed): delete the pod so that its replacement mounts the right one", pod.serviceAccount, want, pod.secret))
	}
	return why
}

func listedAccounts(a *memoryv1alpha1.AccessSpec) string {
	names := make([]string, len(a.ServiceAccounts))
	for i, g := range a.ServiceAccounts {
		names[i] = strconv.Quote(g.Name)
	}
	return strings.Join(names, ", ")
}
