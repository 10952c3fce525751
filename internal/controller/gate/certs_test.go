package gate

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/agentmem/memory-adapter-operator/internal/manageridentity"
	"github.com/agentmem/memory-adapter-operator/internal/webhook"
)

// The manager's own certificates (config/default): the rotator fills the shipped empty Secret
// and injects its CA into the webhook configuration, and reports ready once the serving pair
// is where the webhook server reads it, which the kubelet projects from the Secret and this
// spec does in its place. A configuration of its own, not the suite's (whose caBundle is
// envtest's CA), with a selector that matches no pod, under the names config/default renders:
// the rotator runs as the manager's ServiceAccount, whose RBAC and policies allow exactly
// these two objects.
var _ = Describe("webhook certificate rotation", func() {
	It("issues a CA and a serving certificate into the Secret and the cert dir, and injects the CA into the webhook configuration", func(ctx SpecContext) {
		ns := manageridentity.Namespace
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manageridentity.WebhookCertSecret}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, secret)).To(Succeed()) })
		whc := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: manageridentity.WebhookConfiguration},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:                    "rotation.memory.agentmem.io",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "webhook-service", Path: ptr.To(webhook.Path)}},
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		Expect(k8sClient.Create(ctx, whc)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, whc)).To(Succeed()) })

		certDir := GinkgoT().TempDir()
		mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{
			Scheme:     scheme,
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		ready, err := webhook.AddCertRotation(mgr, webhook.CertRotation{
			Namespace: ns, SecretName: secret.Name, ServiceName: "webhook-service", WebhookConfigurationName: whc.Name, CertDir: certDir,
		})
		Expect(err).NotTo(HaveOccurred())
		mctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); <-done })

		got := &corev1.Secret{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(secret), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKey("ca.crt"))
			g.Expect(got.Data).To(HaveKey("ca.key"))
			g.Expect(got.Data).To(HaveKey("tls.crt"))
			g.Expect(got.Data).To(HaveKey("tls.key"))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(ready).WithTimeout(time.Second).ShouldNot(BeClosed(), "not ready before the certificate is on disk")
		By("projecting the Secret into the cert dir, as the kubelet does")
		for _, k := range []string{"tls.crt", "tls.key"} {
			Expect(os.WriteFile(filepath.Join(certDir, k), got.Data[k], 0o600)).To(Succeed())
		}
		Eventually(ready).WithTimeout(time.Minute).Should(BeClosed())
		Eventually(func(g Gomega) {
			w := &admissionregistrationv1.MutatingWebhookConfiguration{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(whc), w)).To(Succeed())
			g.Expect(w.Webhooks[0].ClientConfig.CABundle).To(Equal(got.Data["ca.crt"]), "the CA is injected")
		}).WithTimeout(time.Minute).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})
