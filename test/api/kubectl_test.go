package apitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// kubectl runs the kubectl built by hack/k8s-binaries.sh against the envtest API server, with
// its own discovery cache and HOME, so nothing from the machine's kubectl setup leaks in.
func kubectl(args ...string) (string, error) {
	home := GinkgoT().TempDir()
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", kubeconfigPath, "--cache-dir", filepath.Join(home, "cache")}, args...)
	cmd := exec.CommandContext(c, kubectlPath, full...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

var _ = Describe("kubectl", func() {
	It("explains spec.manifest from the CRD's field docs", func() {
		// The API server publishes a new CRD's OpenAPI document shortly after the CRD is
		// established, so explain is polled until it finds the resource.
		var out string
		Eventually(func(g Gomega) {
			var err error
			out, err = kubectl("explain", "memoryadapter.spec.manifest")
			g.Expect(err).NotTo(HaveOccurred(), out)
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(out).To(ContainSubstring("GROUP:      memory.agentmem.io"))
		Expect(out).To(ContainSubstring("manifest is the fidelity manifest the adapter publishes"))
		for _, field := range []string{"adapter", "nativeItemFields", "droppedItemFields", "supportedFilters",
			"searchConsistency", "retrieveFidelity", "searchFidelity", "searchReturnsTags", "preservesMetadata"} {
			Expect(out).To(MatchRegexp(`(?m)^\s+`+field+`\s+<`), "explain lists %s", field)
		}
		Expect(out).To(ContainSubstring("supportedFilters is the exact set of metadata keys"))
		Expect(out).To(MatchRegexp(`adapter\s+<string> -required-`))

		out, err := kubectl("explain", "madp.spec.manifest.searchConsistency")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`ENUM:\s+immediate\s+eventual`))
	})

	It("prints the Backend, Consistency, Conformant, Available, Reason and Service Version columns, and the message with -o wide", func() {
		ns := newNamespace()
		a := newAdapter(ns, fullManifest())
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		now := metav1.Now()
		for _, c := range []metav1.Condition{
			{Type: v1alpha1.ConditionConformant, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConformancePassed, Message: "All applicable cases passed"},
			{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonEvidenceStale, Message: "No evidence for 2m"},
		} {
			c.LastTransitionTime = now
			c.ObservedGeneration = a.Generation
			meta.SetStatusCondition(&a.Status.Conditions, c)
		}
		a.Status.ServiceVersion = "3.46.1"
		a.Status.ObservedGeneration = a.Generation
		Expect(k8sClient.Status().Update(ctx, a)).To(Succeed())

		out, err := kubectl("get", "madp", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(2), out)
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "BACKEND", "CONSISTENCY", "CONFORMANT", "AVAILABLE", "REASON", "SERVICE", "VERSION", "AGE"}))
		row := strings.Fields(lines[1])
		Expect(row).To(HaveLen(8), out)
		Expect(row[:7]).To(Equal([]string{a.Name, "SQLite", "immediate", "True", "False", v1alpha1.ReasonEvidenceStale, "3.46.1"}))

		out, err = kubectl("get", "madp", "-n", ns, "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), out)
		lines = strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines[0]).To(HaveSuffix("MESSAGE"), out)
		Expect(lines[1]).To(HaveSuffix("No evidence for 2m"), out)

		// The agentmem category reaches it too, so `kubectl get agentmem` lists every kind of
		// the project.
		out, err = kubectl("get", "agentmem", "-n", ns, "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(Equal("memoryadapter.memory.agentmem.io/" + a.Name))
	})
})

// The Makefile's deployment targets use the user's kubectl when its version is within one
// minor of the tested Kubernetes, and the project's own otherwise (hack/kubectl.sh).
var _ = Describe("the Makefile's kubectl choice", func() {
	// choose puts a kubectl reporting version first on PATH and returns it and the choice.
	choose := func(version string) (fake, chosen string) {
		dir := GinkgoT().TempDir()
		fake = filepath.Join(dir, "kubectl")
		Expect(os.WriteFile(fake, []byte("#!/bin/sh\necho 'Client Version: "+version+"'\n"), 0o755)).To(Succeed())
		cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "hack", "kubectl.sh"))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred())
		return fake, strings.TrimSpace(string(out))
	}
	It("uses the kubectl on PATH within one minor, and builds its own beyond", func() {
		env, err := os.ReadFile(filepath.Join("..", "..", "hack", "versions.env"))
		Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`(?m)^K8S_VERSION=v1\.(\d+)\.`).FindSubmatch(env)
		Expect(m).NotTo(BeNil(), "hack/versions.env has no K8S_VERSION=v1.N.P line")
		minor, err := strconv.Atoi(string(m[1]))
		Expect(err).NotTo(HaveOccurred())
		at := func(d int) string { return fmt.Sprintf("v1.%d.3", minor+d) }
		for _, v := range []string{at(-1), at(0), at(1)} {
			fake, chosen := choose(v)
			Expect(chosen).To(Equal(fake), "kubectl %s is within one minor of the tested version", v)
		}
		for _, v := range []string{at(-7), at(2)} {
			_, chosen := choose(v)
			Expect(chosen).To(Equal(kubectlPath), "kubectl %s is too far from the tested version", v)
		}
	})

	It("renders make deploy's installer with the chosen kubectl, never one of its own", func() {
		dir := GinkgoT().TempDir()
		calls, fake := filepath.Join(dir, "calls"), filepath.Join(dir, "kubectl")
		// The chosen kubectl records every call, renders with the real one, and applies nothing.
		script := "#!/bin/sh\necho \"$1\" >>" + calls + "\ncase \"$1\" in kustomize) exec " + kubectlPath +
			" \"$@\" ;; *) cat >/dev/null ;; esac\n"
		Expect(os.WriteFile(fake, []byte(script), 0o755)).To(Succeed())
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "deploy", "KUBECTL="+fake, "MANIFESTS_CHECKED=1", "IMG=example.com/op:1")
		cmd.Dir = filepath.Join("..", "..")
		// No kubectl of the project's can be had: with an empty cache and no Go toolchain on PATH,
		// hack/k8s-binaries.sh fails at once instead of building one.
		cmd.Env = append(os.Environ(), "MAO_CACHE_DIR="+filepath.Join(dir, "no-cache"), "PATH=/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "make deploy: %s", out)
		got, err := os.ReadFile(calls)
		Expect(err).NotTo(HaveOccurred())
		// The two ends of the pipe start together, so the order of their calls is not fixed.
		Expect(strings.Fields(string(got))).To(ConsistOf("kustomize", "apply"), "the chosen kubectl renders and applies")
		Expect(string(out)).NotTo(ContainSubstring("k8s-binaries"), "make deploy built a kubectl of its own")
	})
})
