package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This spec proves the envtest assets work: a real kube-apiserver backed by a real etcd
// accepts, stores, serves and deletes objects through a controller-runtime client, and the
// CRDs from config/crd/bases are installed.
var _ = Describe("envtest control plane", func() {
	var ns *corev1.Namespace

	BeforeEach(func() {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "smoke-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		Expect(ns.Name).To(HavePrefix("smoke-"), "the API server fills in generateName")
	})

	AfterEach(func() {
		// envtest runs no namespace controller, so the namespace only goes Terminating; the
		// delete still proves the call path and keeps the spec's footprint explicit.
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})

	It("serves a real API server", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		info, err := dc.ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Major).To(Equal("1"))
		Expect(info.GitVersion).To(HavePrefix("v1."))
	})

	It("creates, reads back and deletes a ConfigMap", func() {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns.Name},
			Data:       map[string]string{"greeting": "héllo, wörld", "big": "9007199254740993"},
		}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		Expect(cm.UID).NotTo(BeEmpty(), "the API server assigns a UID")
		Expect(cm.ResourceVersion).NotTo(BeEmpty(), "etcd assigns a resource version")

		var got corev1.ConfigMap
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), &got)).To(Succeed())
		Expect(got.UID).To(Equal(cm.UID))
		Expect(got.Data).To(Equal(cm.Data))

		var list corev1.ConfigMapList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
		Expect(list.Items).To(ContainElement(HaveField("Name", "smoke")))

		Expect(k8sClient.Delete(ctx, cm)).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	})

	It("rejects an invalid object with a server-side validation error", func() {
		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_DNS_Name", Namespace: ns.Name}}
		err := k8sClient.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	})

	It("has the project's CRDs installed and established", func() {
		Expect(testEnv.CRDs).NotTo(BeEmpty(), "config/crd/bases must hold at least one CRD")
		for _, installed := range testEnv.CRDs {
			var crd apiextensionsv1.CustomResourceDefinition
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: installed.Name}, &crd)).To(Succeed())
			Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established),
				HaveField("Status", apiextensionsv1.ConditionTrue),
			)), "CRD %s is not established", crd.Name)
		}
	})
})
