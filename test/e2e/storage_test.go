//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// volumeDeadline covers the provisioner's helper pod (create, run, delete) on top of the
// consuming pod's own start.
const volumeDeadline = 4 * time.Minute

// volumePod runs script with /bin/sh (the helper image is the cluster's one image with a
// shell) as the non-root user, with the claim mounted at /data; whatever the script writes to
// /dev/termination-log reaches the pod's status.
func volumePod(name, claim, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels(name)},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
			Containers: []corev1.Container{{
				Name: "main", Image: helperImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/bin/sh", "-c", script},
				VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				SecurityContext: hardened(),
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// waitPodSucceeded waits for a run-to-completion pod and returns its termination message.
func waitPodSucceeded(ctx context.Context, name string, d time.Duration) string {
	var msg string
	Eventually(func(g Gomega) {
		p, err := clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).NotTo(Equal(corev1.PodFailed), "pod %s failed: %+v", name, p.Status.ContainerStatuses)
		g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(p.Status.ContainerStatuses[0].State.Terminated).NotTo(BeNil())
		msg = p.Status.ContainerStatuses[0].State.Terminated.Message
	}).WithTimeout(d).WithPolling(poll).Should(Succeed())
	return msg
}

// deletePodAndWait deletes a pod and waits until it is gone, so its volume is unmounted.
func deletePodAndWait(ctx context.Context, name string) {
	Expect(clientset.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
	Eventually(func() bool {
		_, err := clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(podDeadline).WithPolling(poll).Should(BeTrue(), "pod %s was not deleted", name)
}

var _ = Describe("dynamic provisioning (local-path-provisioner, the default StorageClass)", Ordered, func() {
	AfterEach(func() { printDiagnostics(namespace, "local-path-storage") })

	It("binds a claim on the default class, keeps a file across pods, and removes the directory with the claim", func(ctx SpecContext) {
		const claim = "data"
		token := "written-by-e2e-" + rand.String(10)

		By("creating a claim that names no StorageClass")
		pvc, err := clientset.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: namespace},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("64Mi")}},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal("local-path")), "the DefaultStorageClass admission plugin assigns the default class")

		By("staying Pending until a pod uses it (WaitForFirstConsumer)")
		Consistently(func(g Gomega) {
			p, err := clientset.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.ClaimPending))
		}).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())

		By("writing a file from a first pod")
		_, err = clientset.CoreV1().Pods(namespace).Create(ctx,
			volumePod("writer", claim, fmt.Sprintf("echo %s >/data/proof && sync && echo wrote >/dev/termination-log", token)),
			metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(waitPodSucceeded(ctx, "writer", volumeDeadline))).To(Equal("wrote"))

		pvc, err = clientset.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		pv, err := clientset.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pv.Spec.StorageClassName).To(Equal("local-path"))
		Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
		Expect(pv.Annotations).To(HaveKeyWithValue("pv.kubernetes.io/provisioned-by", "rancher.io/local-path"))
		var hostDir string
		switch {
		case pv.Spec.HostPath != nil:
			hostDir = pv.Spec.HostPath.Path
		case pv.Spec.Local != nil:
			hostDir = pv.Spec.Local.Path
		}
		Expect(hostDir).To(HavePrefix(filepath.Join(clusterDir, "local-path")+"/"), "volumes live in the cluster's state directory")

		By("finding the file in the volume's directory on the host (" + hostDir + ")")
		b, err := os.ReadFile(filepath.Join(hostDir, "proof"))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(string(b))).To(Equal(token))

		By("reading it back from a second pod after the first is gone")
		deletePodAndWait(ctx, "writer")
		_, err = clientset.CoreV1().Pods(namespace).Create(ctx,
			volumePod("reader", claim, "cat /data/proof >/dev/termination-log"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(waitPodSucceeded(ctx, "reader", volumeDeadline))).To(Equal(token))
		deletePodAndWait(ctx, "reader")

		By("deleting the claim: the volume and its host directory go (reclaim policy Delete)")
		Expect(clientset.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, claim, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := clientset.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(volumeDeadline).WithPolling(poll).Should(BeTrue(), "PersistentVolume %s was not deleted", pv.Name)
		_, err = os.Stat(hostDir)
		Expect(os.IsNotExist(err)).To(BeTrue(), "host directory %s still exists (stat: %v)", hostDir, err)
	}, SpecTimeout(15*time.Minute))
})
