package render

import (
	"fmt"
	"time"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	// TLSMountDir is where an adapter pod finds its serving certificate and key.
	TLSMountDir = "/var/run/memory-adapter/tls"
	// DefaultCertLifetime is a serving certificate's lifetime when the manager sets none:
	// short enough that a leaked key ages out, long enough that renewals are rare writes.
	DefaultCertLifetime = 90 * 24 * time.Hour
	// EnvTLSCertFile tells an External server where its serving certificate is.
	EnvTLSCertFile = "MEMORY_ADAPTER_TLS_CERT_FILE"
	// EnvTLSKeyFile tells an External server where its serving certificate's key is.
	EnvTLSKeyFile = "MEMORY_ADAPTER_TLS_KEY_FILE"
)

// tlsMode is the adapter's transport security: Operator unless the spec opts out.
func tlsMode(ma *memoryv1alpha1.MemoryAdapter) memoryv1alpha1.TLSMode {
	if ma.Spec.TLS != nil && ma.Spec.TLS.Mode == memoryv1alpha1.TLSDisabled {
		return memoryv1alpha1.TLSDisabled
	}
	return memoryv1alpha1.TLSOperator
}

// UsesTLS reports whether the adapter serves HTTPS.
func UsesTLS(ma *memoryv1alpha1.MemoryAdapter) bool {
	return tlsMode(ma) == memoryv1alpha1.TLSOperator
}

// URLScheme is the adapter's URL scheme.
func URLScheme(ma *memoryv1alpha1.MemoryAdapter) string {
	if UsesTLS(ma) {
		return "https"
	}
	return "http"
}

// TLSSecretName is the Secret holding the adapter's serving certificate and key.
func TLSSecretName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name + "-tls" }

// ServiceServerName is the name clients inside the cluster verify: the one the binding's URL
// uses.
func ServiceServerName(ma *memoryv1alpha1.MemoryAdapter) string {
	return fmt.Sprintf("%s.%s.svc", serviceName(ma), ma.Namespace)
}

// ServiceDNSNames are the names a serving certificate covers: every form by which a pod
// reaches the Service through cluster DNS.
func ServiceDNSNames(ma *memoryv1alpha1.MemoryAdapter) []string {
	svc := serviceName(ma)
	return []string{
		ServiceServerName(ma),
		ServiceServerName(ma) + ".cluster.local",
		svc + "." + ma.Namespace,
		svc,
	}
}

// RenewAt is when a certificate valid from issued to notAfter is renewed: after two thirds
// of its life, so a third is left for the kubelet to deliver the next one (a minute or so)
// and for a manager that was down to come back.
func RenewAt(issued, notAfter time.Time) time.Time {
	return issued.Add(notAfter.Sub(issued) * 2 / 3)
}

// tlsVolume mounts the serving certificate and key, readable by the pod's group only.
func tlsVolume(ma *memoryv1alpha1.MemoryAdapter) corev1.Volume {
	return corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: TLSSecretName(ma), DefaultMode: ptr.To[int32](0o440),
		Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, {Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}},
	}}}
}
