//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// servedCertificate is the certificate the adapter's Service answers a new TLS connection
// with, verified against the binding's CA for the Service's name.
func servedCertificate(ctx context.Context, g Gomega, c client.Client, ns, name string) *x509.Certificate {
	sec := &corev1.Secret{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-binding"}, sec)).To(Succeed())
	svc := &corev1.Service{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)).To(Succeed())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(sec.Data["ca.crt"])).To(BeTrue())
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: fmt.Sprintf("%s.%s.svc", name, ns)}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(svc.Spec.ClusterIP, "8080"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
}

// tlsRenewalSpec is the TLS acceptance on the cluster: an adapter serves HTTPS with the
// operator's certificate, a bound agent (agent-check --watch, on the projected binding) and
// a client on the node verify it with the binding's ca.crt, and a renewal under the adapter's
// own short certificate lifetime reaches the pod and the agent without one failed call. The
// lifetime is the adapter's, not the manager's flag, so no manager restarts and the spec runs
// beside others.
func tlsRenewalSpec(ctx context.Context, c client.Client, ns string) {
	const name = "tlsmem"
	const lifetime = 90 * time.Second
	tl := newTimeline("tls")
	By("an adapter whose serving certificates live 90 seconds (spec.tls.certificateLifetime): renewed after 60 s")
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	ma.Spec.TLS = &memoryv1alpha1.TLSSpec{CertificateLifetime: memoryv1alpha1.NewDuration(lifetime)}
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	first := ma.Status.TLS
	Expect(first).NotTo(BeNil())
	Expect(first.Mode).To(Equal(memoryv1alpha1.TLSOperator))
	Expect(time.Until(first.NotAfter.Time)).To(BeNumerically("<=", lifetime))
	tl.mark("Available over TLS; certificate valid until %s, renewal after %s", first.NotAfter.UTC().Format(time.RFC3339), first.RenewAfter.UTC().Format(time.RFC3339))

	sec := &corev1.Secret{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-binding"}, sec)).To(Succeed())
	Expect(string(sec.Data["url"])).To(Equal(fmt.Sprintf("https://%s.%s.svc:8080", name, ns)))
	Expect(sec.Data).To(HaveKey("ca.crt"))

	By("a client on the node verifies the certificate with the binding's ca.crt and stores an item")
	st := adapterStore(ctx, c, ns, name)
	kept := memory.NewItem([]byte(`"stored over TLS"`), "e2e")
	_, err := st.Store(ctx, kept)
	Expect(err).NotTo(HaveOccurred())

	By("a bound agent stores every two seconds on its projected binding (ca.crt included)")
	since := time.Now()
	agent := startWatchingAgent(ctx, c, ns, name)
	tl.mark("agent %s stores over TLS", agent)

	By("the certificate is renewed, and the pod serves the new one before the old one ends")
	var renewed *memoryv1alpha1.TLSStatus
	Eventually(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
		g.Expect(got.Status.TLS).NotTo(BeNil())
		g.Expect(got.Status.TLS.NotAfter.After(first.NotAfter.Time)).To(BeTrue(), "not renewed yet (valid until %s)", got.Status.TLS.NotAfter)
		renewed = got.Status.TLS
	}).WithTimeout(3 * lifetime).WithPolling(time.Second).Should(Succeed())
	tl.mark("status: renewed, valid until %s", renewed.NotAfter.UTC().Format(time.RFC3339))
	Eventually(func(g Gomega) {
		cert := servedCertificate(ctx, g, c, ns, name)
		g.Expect(cert.NotAfter.Equal(renewed.NotAfter.Time)).To(BeTrue(), "the pod serves the certificate valid until %s", cert.NotAfter)
	}).WithTimeout(lifetime).WithPolling(time.Second).Should(Succeed())
	served := tl.mark("the pod serves the renewed certificate")
	Expect(served.Before(first.NotAfter.Time)).To(BeTrue(), "the renewal reached the pod after the old certificate had ended")

	By("the agent saw no failed call across the renewal, and the item reads back")
	Eventually(func(g Gomega) {
		g.Expect(agentAnswers(ctx, ns, agent, served.Add(4*time.Second))).NotTo(BeEmpty(), "no call since the renewal landed")
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	answers := agentAnswers(ctx, ns, agent, since)
	tl.mark("the agent's answers: %s", summarizeAnswers(answers))
	for _, a := range answers {
		Expect(a.Answer).To(HavePrefix("201 "), "the agent's call at %s", a.At.Format(time.RFC3339Nano))
	}
	got, err := st.Retrieve(ctx, kept.ID)
	Expect(err).NotTo(HaveOccurred())
	Expect(got).NotTo(BeNil())
	Expect(strings.Trim(string(got.Content), `"`)).To(Equal("stored over TLS"))
}
