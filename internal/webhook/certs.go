package webhook

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// CertRotation names what the manager's own certificate authority serves: the Secret it keeps
// the CA and serving certificate in, the Service the API server calls, and the webhook
// configuration whose caBundle it fills. The defaults are the names config/default renders.
type CertRotation struct {
	// Namespace is the manager's namespace, where the Secret and the Service live.
	Namespace string
	// SecretName is the Secret the rotator writes; it must exist (config/default ships it empty).
	SecretName string
	// ServiceName is the webhook Service; the serving certificate is for its DNS names.
	ServiceName string
	// WebhookConfigurationName is the MutatingWebhookConfiguration whose caBundle is injected.
	WebhookConfigurationName string
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
}

// The rotator's cache lists and watches webhook configurations (a list cannot be narrowed by
// name), but it may read and write only the operator's own by name: the caBundle of another
// webhook is not the operator's to change. The name is config/default's, prefix included.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;update,resourceNames=mutating-webhook-configuration
// The rotator caches and updates the Secrets of the manager's own namespace only (kustomize
// moves this Role into the installation's namespace).
// +kubebuilder:rbac:groups="",namespace=memory-adapter-operator-system,resources=secrets,verbs=get;list;watch;update

// AddCertRotation adds open-policy-agent's cert-controller to the manager: it issues a CA and
// a serving certificate into the Secret, keeps them renewed, writes them to CertDir and injects
// the CA into the webhook configuration. The returned channel is closed once the certificate
// is on disk; the webhook server must not start before (it would fail to load it).
func AddCertRotation(mgr ctrl.Manager, c CertRotation) (<-chan struct{}, error) {
	ready := make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.Namespace, Name: c.SecretName},
		CertDir:        c.CertDir,
		CAName:         "memory-adapter-operator-ca",
		CAOrganization: "memory-adapter-operator",
		DNSName:        fmt.Sprintf("%s.%s.svc", c.ServiceName, c.Namespace),
		ExtraDNSNames:  []string{fmt.Sprintf("%s.%s.svc.cluster.local", c.ServiceName, c.Namespace)},
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: c.WebhookConfigurationName, Type: rotator.Mutating}},
		// Every replica serves the webhook, so every replica must have the certificate, and
		// every replica runs the rotator. Leader-only rotation would leave the standby never
		// Ready: cert-controller closes IsReady only from the rotator's own Start, which a
		// RequireLeaderElection rotator runs on the leader alone. Two rotators are safe: both
		// serve the Secret the kubelet mounts (config/default), a rotator writes the Secret
		// only when its certificate is missing or due, and an update from a stale copy fails
		// on its resourceVersion and is retried against the other replica's certificate.
		// Validity and renewal are cert-controller's defaults (docs/gating.md#certificates):
		// a 10-year CA, a 1-year serving certificate renewed 90 days before it expires,
		// checked every 12 hours.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("add webhook certificate rotation: %w", err)
	}
	return ready, nil
}
