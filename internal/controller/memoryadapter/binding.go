package memoryadapter

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// ensureBinding makes the binding Secret hold the adapter's derived token, the tokens its
// server accepts, url, type and provider, and returns the token plan (tokens are never
// logged). The operator has no right to read Secrets, so it does not look: it creates the
// Secret, or applies it server-side when it exists, once per manager process and whenever
// the desired content changes; a hand edit is repaired when the adapter refuses the
// operator's token (see forgetBinding), when the manager restarts, or when the adapter's
// spec changes.
func (r *Reconciler) ensureBinding(ctx context.Context, s *scope) (render.TokenPlan, error) {
	ma := s.ma
	if len(r.TokenKey) < render.MinTokenKeyBytes {
		return render.TokenPlan{}, fmt.Errorf("binding Secret %s: the operator's token key has %d bytes, fewer than %d", render.BindingName(ma), len(r.TokenKey), render.MinTokenKeyBytes)
	}
	var caPEM []byte
	if render.UsesTLS(ma) {
		if r.CA == nil {
			return render.TokenPlan{}, fmt.Errorf("binding Secret %s: the adapter serves TLS and the operator has no CA", render.BindingName(ma))
		}
		caPEM = r.CA.CertPEM
	}
	nextAccepted, serving := "", false
	if r.Prober != nil {
		nextAccepted, serving = r.Prober.NextTokenState(ma.UID)
	}
	tokens := render.PlanTokens(r.TokenKey, ma, nextAccepted, serving, s.now)
	ma.Status.Access = accessStatus(ma, tokens, nextAccepted)
	if tokens.RecheckAfter > 0 {
		s.requeue(tokens.RecheckAfter)
	}
	digest := render.BindingDigest(ma, tokens, caPEM)
	key := client.ObjectKeyFromObject(ma)
	prev, known := r.bindings.Load(key)
	if known && prev.(string) == digest {
		return tokens, nil
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: render.BindingName(ma), Namespace: ma.Namespace, Labels: render.CommonLabels(ma),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: memoryv1alpha1.GroupVersion.String(), Kind: "MemoryAdapter",
				Name: ma.Name, UID: ma.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Type: render.BindingSecretType,
		Data: render.BindingData(ma, tokens, caPEM),
	}
	err := r.Client.Create(ctx, sec, client.FieldOwner(render.FieldOwner))
	switch {
	case err == nil:
		r.Recorder.Eventf(ma, sec, corev1.EventTypeNormal, "CreatedBindingSecret", "Create", "created Secret %s", sec.Name)
	case apierrors.IsAlreadyExists(err):
		if err := r.Client.Apply(ctx, render.BindingApply(ma, tokens, caPEM), client.FieldOwner(render.FieldOwner), client.ForceOwnership); err != nil {
			return render.TokenPlan{}, fmt.Errorf("apply Secret %s: %w", sec.Name, err)
		}
		if known {
			// A digest already applied in this process differs: the desired content changed.
			r.Recorder.Eventf(ma, sec, corev1.EventTypeNormal, "UpdatedBindingSecret", "Update", "applied Secret %s", sec.Name)
		}
	default:
		return render.TokenPlan{}, fmt.Errorf("create Secret %s: %w", sec.Name, err)
	}
	if err := r.applyAccessBindings(ctx, ma, tokens, caPEM); err != nil {
		return render.TokenPlan{}, err
	}
	r.bindings.Store(key, digest)
	recordRotation(r, ma, tokens)
	return tokens, nil
}

// recordRotation tells the adapter's events what a rotation step did, once it is in the
// Secret: the binding's switch, or the start of a rotation.
func recordRotation(r *Reconciler, ma *memoryv1alpha1.MemoryAdapter, tokens render.TokenPlan) {
	old := ma.Status.Token
	switch {
	case tokens.Switched:
		grace := "the previous token is refused from now on"
		if e := tokens.Status.PreviousExpiresAt; e != nil {
			grace = "the previous token is accepted until " + e.UTC().Format(time.RFC3339)
		}
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "TokenRotated", "RotateToken",
			"the binding Secret's token is now rotation %q; %s", tokens.Status.Rotation, grace)
	case tokens.Next != "" && (old == nil || old.PendingRotation != tokens.Status.PendingRotation):
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "TokenRotationStarted", "RotateToken",
			"the adapter pods are given the token of rotation %q; the binding switches once every pod accepts it", tokens.Status.PendingRotation)
	}
}

// forgetBinding makes the next reconcile apply the binding Secret again.
func (r *Reconciler) forgetBinding(ma *memoryv1alpha1.MemoryAdapter) {
	r.bindings.Delete(client.ObjectKeyFromObject(ma))
}

// accessStatus is status.access after this reconcile: the ServiceAccounts of spec.access once
// every serving pod answered the plan's check token, which only the token file of exactly
// these grants accepts; until then what it said before; nil without spec.access.
func accessStatus(ma *memoryv1alpha1.MemoryAdapter, tokens render.TokenPlan, nextAccepted string) *memoryv1alpha1.AccessStatus {
	if ma.Spec.Access == nil {
		return nil
	}
	if tokens.AccessCheck != "" && nextAccepted == tokens.AccessCheck {
		return &memoryv1alpha1.AccessStatus{ServiceAccounts: tokens.AccessNames}
	}
	return ma.Status.Access
}

// applyAccessBindings applies each ServiceAccount's Secret of spec.access, after the adapter's
// own: the token file that accepts a ServiceAccount's token is written first, and the gate
// waits until every adapter pod reads it (status.access) before a pod of that ServiceAccount
// starts.
func (r *Reconciler) applyAccessBindings(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, tokens render.TokenPlan, caPEM []byte) error {
	for _, t := range tokens.Access {
		if err := r.Client.Apply(ctx, render.AccessBindingApply(ma, t, caPEM), client.FieldOwner(render.FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply Secret %s: %w", render.AccessBindingName(ma.Name, t.ServiceAccount), err)
		}
	}
	if len(tokens.Access) > 0 {
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "AppliedAccessBindings", "Apply",
			"applied the binding Secrets of ServiceAccounts %s", strings.Join(tokens.AccessNames, ", "))
	}
	return nil
}
