package memoryadapter

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// FieldOwner is the server-side apply field manager of the objects the operator applies.
const FieldOwner = "memory-adapter-operator"

// MinTokenKeyBytes is the shortest operator key accepted for deriving adapter tokens.
const MinTokenKeyBytes = 32

// ErrUnauthorized marks an evidence read the adapter refused with 401: the token the
// operator derives no longer matches the one the adapter serves with.
var ErrUnauthorized = errors.New("the adapter refused the operator's token")

// bindingData is the binding Secret's content: the Service Binding specification's
// Provisioned Service keys, ca.crt (its convention for a CA) when the adapter serves TLS, and
// the tokens the adapter accepts, which only the adapter's own pods mount.
func bindingData(ma *memoryv1alpha1.MemoryAdapter, tokens tokenPlan, caPEM []byte) map[string][]byte {
	d := map[string][]byte{
		"type":            []byte("memory-adapter"),
		"provider":        []byte("agentmem"),
		"url":             []byte(serviceURL(ma)),
		"token":           []byte(tokens.current),
		acceptedTokensKey: acceptedTokensFile(tokens.accepted),
	}
	if usesTLS(ma) {
		d["ca.crt"] = caPEM
	}
	return d
}

// bindingApply is the binding Secret as the operator applies it: content, type, labels and
// the controller reference, so the garbage collector removes it with the adapter.
func bindingApply(ma *memoryv1alpha1.MemoryAdapter, tokens tokenPlan, caPEM []byte) *corev1ac.SecretApplyConfiguration {
	return ownedSecretApply(ma, bindingName(ma)).
		WithType(BindingSecretType).
		WithData(bindingData(ma, tokens, caPEM))
}

// ownedSecretApply is a Secret the adapter controls, with the operator's labels: what the
// manager's admission policy requires of every Secret it writes in an adapter's namespace.
func ownedSecretApply(ma *memoryv1alpha1.MemoryAdapter, name string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, ma.Namespace).
		WithLabels(commonLabels(ma)).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(memoryv1alpha1.GroupVersion.String()).
			WithKind("MemoryAdapter").
			WithName(ma.Name).
			WithUID(ma.UID).
			WithController(true).
			WithBlockOwnerDeletion(true))
}

// bindingDigest identifies what was applied, so an unchanged binding is not applied again.
func bindingDigest(ma *memoryv1alpha1.MemoryAdapter, tokens tokenPlan, caPEM []byte) string {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\x00%s\x00", ma.UID, BindingSecretType)
	data := bindingData(ma, tokens, caPEM)
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s=%x\x00", k, data[k])
	}
	labels := commonLabels(ma)
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

// ensureBinding makes the binding Secret hold the adapter's derived token, the tokens its
// server accepts, url, type and provider, and returns the token plan (tokens are never
// logged). The operator has no right to read Secrets, so it does not look: it creates the
// Secret, or applies it server-side when it exists, once per manager process and whenever
// the desired content changes; a hand edit is repaired when the adapter refuses the
// operator's token (see forgetBinding), when the manager restarts, or when the adapter's
// spec changes.
func (r *Reconciler) ensureBinding(ctx context.Context, s *scope) (tokenPlan, error) {
	ma := s.ma
	if len(r.TokenKey) < MinTokenKeyBytes {
		return tokenPlan{}, fmt.Errorf("binding Secret %s: the operator's token key has %d bytes, fewer than %d", bindingName(ma), len(r.TokenKey), MinTokenKeyBytes)
	}
	var caPEM []byte
	if usesTLS(ma) {
		if r.CA == nil {
			return tokenPlan{}, fmt.Errorf("binding Secret %s: the adapter serves TLS and the operator has no CA", bindingName(ma))
		}
		caPEM = r.CA.CertPEM
	}
	nextAccepted, serving := "", false
	if r.Prober != nil {
		nextAccepted, serving = r.Prober.nextTokenState(ma.UID)
	}
	tokens := planTokens(r.TokenKey, ma, nextAccepted, serving, s.now)
	if tokens.recheckAfter > 0 {
		s.requeue(tokens.recheckAfter)
	}
	digest := bindingDigest(ma, tokens, caPEM)
	key := client.ObjectKeyFromObject(ma)
	prev, known := r.bindings.Load(key)
	if known && prev.(string) == digest {
		return tokens, nil
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName(ma), Namespace: ma.Namespace, Labels: commonLabels(ma),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: memoryv1alpha1.GroupVersion.String(), Kind: "MemoryAdapter",
				Name: ma.Name, UID: ma.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Type: BindingSecretType,
		Data: bindingData(ma, tokens, caPEM),
	}
	err := r.Client.Create(ctx, sec, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		r.Recorder.Eventf(ma, sec, corev1.EventTypeNormal, "CreatedBindingSecret", "Create", "created Secret %s", sec.Name)
	case apierrors.IsAlreadyExists(err):
		if err := r.Client.Apply(ctx, bindingApply(ma, tokens, caPEM), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return tokenPlan{}, fmt.Errorf("apply Secret %s: %w", sec.Name, err)
		}
		if known {
			// A digest already applied in this process differs: the desired content changed.
			r.Recorder.Eventf(ma, sec, corev1.EventTypeNormal, "UpdatedBindingSecret", "Update", "applied Secret %s", sec.Name)
		}
	default:
		return tokenPlan{}, fmt.Errorf("create Secret %s: %w", sec.Name, err)
	}
	r.bindings.Store(key, digest)
	recordRotation(r, ma, tokens)
	return tokens, nil
}

// recordRotation tells the adapter's events what a rotation step did, once it is in the
// Secret: the binding's switch, or the start of a rotation.
func recordRotation(r *Reconciler, ma *memoryv1alpha1.MemoryAdapter, tokens tokenPlan) {
	old := ma.Status.Token
	switch {
	case tokens.switched:
		grace := "the previous token is refused from now on"
		if e := tokens.status.PreviousExpiresAt; e != nil {
			grace = "the previous token is accepted until " + e.UTC().Format(time.RFC3339)
		}
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "TokenRotated", "RotateToken",
			"the binding Secret's token is now rotation %q; %s", tokens.status.Rotation, grace)
	case tokens.next != "" && (old == nil || old.PendingRotation != tokens.status.PendingRotation):
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "TokenRotationStarted", "RotateToken",
			"the adapter pods are given the token of rotation %q; the binding switches once every pod accepts it", tokens.status.PendingRotation)
	}
}

// forgetBinding makes the next reconcile apply the binding Secret again.
func (r *Reconciler) forgetBinding(ma *memoryv1alpha1.MemoryAdapter) {
	r.bindings.Delete(client.ObjectKeyFromObject(ma))
}

// tokenKeyField is the key of the operator's token-key Secret that holds the key.
const tokenKeyField = "key"

// LoadOrCreateTokenKey returns the operator's token key from the Secret ref, creating the
// Secret with a fresh random key when it does not exist. r must read from the API server,
// not a cache, so that the operator's own Secrets are the only ones it ever reads.
func LoadOrCreateTokenKey(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName) ([]byte, error) {
	var key []byte
	err := loadOrCreateSecret(ctx, r, w, ref, "token key",
		func() (map[string][]byte, error) {
			k := make([]byte, MinTokenKeyBytes)
			_, _ = rand.Read(k) // crypto/rand.Read never fails on supported platforms.
			return map[string][]byte{tokenKeyField: k}, nil
		},
		func(data map[string][]byte) error {
			key = data[tokenKeyField]
			if len(key) < MinTokenKeyBytes {
				return fmt.Errorf("key %q has %d bytes, fewer than %d", tokenKeyField, len(key), MinTokenKeyBytes)
			}
			return nil
		})
	return key, err
}

// The operator CA Secret's keys: the CA certificate and its key, in PEM.
const (
	caCertField = "ca.crt"
	caKeyField  = "ca.key"
)

// LoadOrCreateCA returns the operator's CA for adapter serving certificates from the Secret
// ref, creating the Secret with a new CA valid for lifetime when it does not exist.
func LoadOrCreateCA(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName, lifetime time.Duration) (*pki.CA, error) {
	var ca *pki.CA
	err := loadOrCreateSecret(ctx, r, w, ref, "adapter CA",
		func() (map[string][]byte, error) {
			c, err := pki.NewCA("memory-adapter-operator adapter CA", lifetime, time.Now())
			if err != nil {
				return nil, err
			}
			return map[string][]byte{caCertField: c.CertPEM, caKeyField: c.KeyPEM}, nil
		},
		func(data map[string][]byte) error {
			c, err := pki.LoadCA(data[caCertField], data[caKeyField])
			if err != nil {
				return err
			}
			if !time.Now().Before(c.Cert.NotAfter) {
				return fmt.Errorf("the CA expired at %s", c.Cert.NotAfter.UTC().Format(time.RFC3339))
			}
			ca = c
			return nil
		})
	return ca, err
}

// loadOrCreateSecret reads the operator's own Secret ref and hands its data to use, or
// creates it with what generate makes when it does not exist. Two managers starting together
// agree: the one whose create loses reads the winner's Secret.
func loadOrCreateSecret(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName, what string,
	generate func() (map[string][]byte, error), use func(map[string][]byte) error) error {
	for range 2 {
		sec := &corev1.Secret{}
		err := r.Get(ctx, ref, sec)
		if err == nil {
			if err := use(sec.Data); err != nil {
				return fmt.Errorf("%s Secret %s: %w", what, ref, err)
			}
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("read %s Secret %s: %w", what, ref, err)
		}
		data, err := generate()
		if err != nil {
			return fmt.Errorf("%s Secret %s: %w", what, ref, err)
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace,
				Labels: map[string]string{LabelManagedBy: ManagedByValue}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		err = w.Create(ctx, sec, client.FieldOwner(FieldOwner))
		if err == nil {
			return use(data)
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s Secret %s: %w", what, ref, err)
		}
	}
	return fmt.Errorf("%s Secret %s: created and deleted by someone else while starting", what, ref)
}
