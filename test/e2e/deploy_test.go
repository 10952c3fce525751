//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// operatorNamespace and managerDeployment are config/default's names (namespace plus the
// memory-adapter-operator- name prefix).
const (
	operatorNamespace = "memory-adapter-operator-system"
	// monitoringNamespace is the installation's monitoring namespace (make deploy
	// MONITORING_NAMESPACE=...): the one the adapters' NetworkPolicies admit to their metrics
	// port. The NetworkPolicy spec runs its scraper probe there.
	monitoringNamespace = "mao-e2e-monitoring"
	managerDeployment   = "memory-adapter-operator-controller-manager"
)

// makeTarget runs `make target IMG=<managerImage>` from the repository root against the local
// cluster, as a user following docs/local-cluster.md would.
func makeTarget(ctx context.Context, target string) {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, "make", target, "IMG="+managerImage, "MONITORING_NAMESPACE="+monitoringNamespace)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(clusterDir, "admin.kubeconfig"))
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "make %s failed; its output is above", target)
}

// The suite's first process installed the operator with make deploy (installOperator); this
// spec reads what that made, beside the others. make undeploy is checked at the end of the
// suite (uninstallOperator), once every adapter namespace is gone.
var _ = Describe("installing the operator with make deploy", func() {
	AfterEach(func() { printDiagnostics(operatorNamespace) })

	It("admits the manager pod into a namespace enforcing the restricted Pod Security Standard", func(ctx SpecContext) {
		ns, err := clientset.CoreV1().Namespaces().Get(ctx, operatorNamespace, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))

		dep, err := clientset.AppsV1().Deployments(operatorNamespace).Get(ctx, managerDeployment, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dep.Spec.Replicas).To(Equal(ptr.To[int32](2)), "two replicas under leader election")
		anti := dep.Spec.Template.Spec.Affinity.PodAntiAffinity
		Expect(anti.RequiredDuringSchedulingIgnoredDuringExecution).To(BeEmpty(), "a one-node cluster must still run both")
		Expect(anti.PreferredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
		c := dep.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal(managerImage), "make deploy sets IMG")
		Expect(c.Args).To(ContainElements("--leader-elect", "--health-probe-bind-address=:8081",
			"--metrics-bind-address=:8443"))
		Expect(c.Env).To(ContainElement(HaveField("ValueFrom.ConfigMapKeyRef.Key", "adapterImage")), "ADAPTER_IMAGE comes from the images ConfigMap")
		images, err := clientset.CoreV1().ConfigMaps(operatorNamespace).Get(ctx, "memory-adapter-operator-images", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(images.Data).To(HaveKeyWithValue("adapterImage", adapterImage), "make deploy sets ADAPTER_IMG")

		By("the ReplicaSet creating the pods: Pod Security admission accepted them under restricted")
		var pods *corev1.PodList
		Eventually(func(g Gomega) {
			pods, err = clientset.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, pod := range pods.Items {
				// The container ran: the image is the one make images built and the runtime
				// accepted the security context (non-root user, read-only root, no capabilities).
				g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
				st := pod.Status.ContainerStatuses[0]
				g.Expect(st.State.Running != nil || st.LastTerminationState.Terminated != nil || st.State.Terminated != nil).
					To(BeTrue(), "container of %s not started yet: %+v", pod.Name, st.State)
			}
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())
		for _, pod := range pods.Items {
			Expect(pod.Spec.Containers[0].Image).To(Equal(managerImage))
			fmt.Fprintf(GinkgoWriter, "manager pod %s: phase %s, container %+v\n", pod.Name, pod.Status.Phase, pod.Status.ContainerStatuses[0].State)
		}
	}, SpecTimeout(5*time.Minute))
})
