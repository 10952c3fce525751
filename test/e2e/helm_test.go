//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// helmRelease is the release name the suite installs the chart as.
const helmRelease = "memory-adapter-operator"

// installWithHelm says whether this run installs the operator with the Helm chart
// (MAO_E2E_INSTALL=helm: the multi-node stage) rather than make deploy. The chart renders
// what make deploy applies (test/chart compares them object by object), so every spec of the
// stage runs against a chart install.
func installWithHelm() bool { return os.Getenv("MAO_E2E_INSTALL") == "helm" }

// helm runs the chart's helm (hack/helm.sh builds it from the Go module proxy, cached) against
// the suite's cluster.
func helm(ctx context.Context, args ...string) {
	GinkgoHelper()
	bin, err := run(ctx, "hack/helm.sh")
	Expect(err).NotTo(HaveOccurred(), "hack/helm.sh could not provide helm")
	cmd := exec.CommandContext(ctx, strings.TrimSpace(bin), args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(clusterDir, "admin.kubeconfig"))
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "helm %s failed; its output is above", strings.Join(args, " "))
}

// helmInstall installs the chart with the suite's images and monitoring namespace in the
// namespace make deploy would use.
func helmInstall(ctx context.Context) {
	GinkgoHelper()
	By("installing the operator with the Helm chart (charts/memory-adapter-operator)")
	repo, tag, ok := strings.Cut(managerImage, ":")
	Expect(ok).To(BeTrue())
	adapterRepo, adapterTag, ok := strings.Cut(adapterImage, ":")
	Expect(ok).To(BeTrue())
	// helm keeps its release record in the namespace, so the namespace must exist before the
	// install; made here with the labels config/manager gives it (the chart's own Namespace,
	// namespace.create, is for installs that leave the namespace to it).
	if out, err := runKubectl(ctx, "create", "namespace", operatorNamespace); err != nil {
		Expect(out).To(ContainSubstring("AlreadyExists"), "kubectl create namespace %s", operatorNamespace)
	}
	kubectl(ctx, "label", "namespace", operatorNamespace,
		"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	helm(ctx, "upgrade", "--install", helmRelease, "charts/memory-adapter-operator", "--namespace", operatorNamespace,
		"--set", "image.repository="+repo, "--set", "image.tag="+tag,
		"--set", "adapterImage.repository="+adapterRepo, "--set", "adapterImage.tag="+adapterTag,
		"--set", "monitoring.namespace="+monitoringNamespace, "--set", "dashboard.enabled=true",
		"--wait", "--timeout", "5m")
}

// helmUninstall removes the release, then the CRD, which the chart keeps on uninstall
// (helm.sh/resource-policy: keep) so that no MemoryAdapter is deleted by a helm mistake.
func helmUninstall(ctx context.Context) {
	GinkgoHelper()
	By("helm uninstall, then the CRD the chart keeps")
	helm(ctx, "uninstall", helmRelease, "--namespace", operatorNamespace, "--wait", "--timeout", "5m")
	kubectl(ctx, "delete", "--ignore-not-found", "crd/memoryadapters.memory.agentmem.io", "namespace/"+operatorNamespace)
}
