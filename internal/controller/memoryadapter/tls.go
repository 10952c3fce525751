package memoryadapter

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// certLifetime is the lifetime of the adapter's next serving certificate: its own
// spec.tls.certificateLifetime, else the manager's, else DefaultCertLifetime.
func (r *Reconciler) certLifetime(ma *memoryv1alpha1.MemoryAdapter) time.Duration {
	def := r.CertLifetime
	if def <= 0 {
		def = render.DefaultCertLifetime
	}
	if ma.Spec.TLS == nil {
		return def
	}
	return ma.Spec.TLS.CertificateLifetime.Or(def)
}

// tlsStatusCurrent reports whether st describes a certificate that still serves ma: from the
// operator's current CA, for the adapter's names, not yet due for renewal, and ending no later
// than a certificate issued now would. The last point makes a shortened lifetime take effect
// at once: a user shortens it to bound how long a key stays valid, not how long the next one
// does.
func (r *Reconciler) tlsStatusCurrent(ma *memoryv1alpha1.MemoryAdapter, st *memoryv1alpha1.TLSStatus, now time.Time) bool {
	return st != nil && st.Mode == memoryv1alpha1.TLSOperator && r.CA != nil &&
		st.CAFingerprint == r.CA.Fingerprint() && slices.Equal(st.DNSNames, render.ServiceDNSNames(ma)) &&
		st.RenewAfter != nil && now.Before(st.RenewAfter.Time) &&
		st.NotAfter != nil && !st.NotAfter.After(now.Add(r.certLifetime(ma)))
}

// ensureServingCertificate keeps the adapter's serving certificate: for mode Disabled it
// records the opt-out; otherwise, when status names no current certificate, it issues one
// from the operator's CA and applies the Secret the pod mounts. The operator cannot read
// Secrets, so status (and, for a status patch not yet in the cache, the record of this
// process) is what says a certificate was issued; the key exists only in the Secret.
func (r *Reconciler) ensureServingCertificate(ctx context.Context, s *scope) error {
	ma := s.ma
	if !render.UsesTLS(ma) {
		s.tls = &memoryv1alpha1.TLSStatus{Mode: memoryv1alpha1.TLSDisabled}
		return nil
	}
	if r.CA == nil {
		return fmt.Errorf("serving certificate for %s: the operator has no CA (the manager's --adapter-ca-secret)", ma.Name)
	}
	key := client.ObjectKeyFromObject(ma)
	current := ma.Status.TLS
	if v, ok := r.issued.Load(key); ok {
		mine := v.(issuedCert)
		switch {
		case mine.uid == ma.UID && (current == nil || current.NotAfter == nil || mine.status.NotAfter.After(current.NotAfter.Time)):
			current = mine.status
		default:
			// The cached status holds this certificate or a later one (the cache only moves
			// forward), or the adapter is a new one of the same name: the record has done its
			// part, and kept for good it would be half a kilobyte per adapter.
			r.issued.CompareAndDelete(key, v)
		}
	}
	if r.tlsStatusCurrent(ma, current, s.now) {
		s.tls = current.DeepCopy()
		s.requeue(current.RenewAfter.Sub(s.now))
		return nil
	}
	names := render.ServiceDNSNames(ma)
	cert, err := r.CA.Issue(names, r.certLifetime(ma), s.now)
	if err != nil {
		return fmt.Errorf("serving certificate for %s: %w", ma.Name, err)
	}
	sec := render.OwnedSecretApply(ma, render.TLSSecretName(ma)).
		WithType(corev1.SecretTypeTLS).
		WithData(map[string][]byte{corev1.TLSCertKey: cert.CertPEM, corev1.TLSPrivateKeyKey: cert.KeyPEM})
	if err := r.Client.Apply(ctx, sec, client.FieldOwner(render.FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("apply Secret %s: %w (the manager's admission policy admits only its own TLS Secrets)", render.TLSSecretName(ma), err)
		}
		return fmt.Errorf("apply Secret %s: %w", render.TLSSecretName(ma), err)
	}
	issued := s.now
	st := &memoryv1alpha1.TLSStatus{
		Mode:          memoryv1alpha1.TLSOperator,
		NotAfter:      &metav1.Time{Time: cert.NotAfter},
		RenewAfter:    &metav1.Time{Time: render.RenewAt(issued, cert.NotAfter).Truncate(time.Second)},
		CAFingerprint: r.CA.Fingerprint(),
		DNSNames:      names,
	}
	r.issued.Store(key, issuedCert{uid: ma.UID, status: st})
	verb := "issued"
	if ma.Status.TLS != nil && ma.Status.TLS.Mode == memoryv1alpha1.TLSOperator {
		verb = "renewed"
	}
	r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate",
		"%s the serving certificate in Secret %s, valid until %s", verb, render.TLSSecretName(ma), cert.NotAfter.UTC().Format(time.RFC3339))
	s.tls = st.DeepCopy()
	s.requeue(st.RenewAfter.Sub(s.now))
	return nil
}

// issuedCert is this process's record of the last certificate it issued for an adapter, for
// reconciles that start from a cached object older than the status patch that recorded it.
type issuedCert struct {
	uid    types.UID
	status *memoryv1alpha1.TLSStatus
}
