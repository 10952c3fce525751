package credentials

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// tokenKeyField is the key of the operator's token-key Secret that holds the key.
const tokenKeyField = "key"

// LoadOrCreateTokenKey returns the operator's token key from the Secret ref, creating the
// Secret with a fresh random key when it does not exist. r must read from the API server,
// not a cache, so that the operator's own Secrets are the only ones it ever reads.
func LoadOrCreateTokenKey(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName) ([]byte, error) {
	var key []byte
	err := loadOrCreateSecret(ctx, r, w, ref, "token key",
		func() (map[string][]byte, error) {
			k := make([]byte, render.MinTokenKeyBytes)
			_, _ = rand.Read(k) // crypto/rand.Read never fails on supported platforms.
			return map[string][]byte{tokenKeyField: k}, nil
		},
		func(data map[string][]byte) error {
			key = data[tokenKeyField]
			if len(key) < render.MinTokenKeyBytes {
				return fmt.Errorf("key %q has %d bytes, fewer than %d", tokenKeyField, len(key), render.MinTokenKeyBytes)
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
				Labels: map[string]string{render.LabelManagedBy: render.ManagedByValue}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		err = w.Create(ctx, sec, client.FieldOwner(render.FieldOwner))
		if err == nil {
			return use(data)
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s Secret %s: %w", what, ref, err)
		}
	}
	return fmt.Errorf("%s Secret %s: created and deleted by someone else while starting", what, ref)
}
