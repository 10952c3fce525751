//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Faults the operator must see through on its own (issue 29): a backend upgraded in place, a
// long outage, a volume that stops taking writes. These helpers observe them the way a
// platform engineer would: a timeline of what the conditions said when, and a bound agent
// pod that keeps calling its adapter and logs every answer.

// timeline records when each step of a spec was seen, printed to GinkgoWriter as it happens
// with the time since the first mark, so a run's log holds the measured healing times that
// docs/operator.md quotes.
type timeline struct {
	name  string
	start time.Time
}

func newTimeline(name string) *timeline {
	t := &timeline{name: name, start: time.Now()}
	fmt.Fprintf(GinkgoWriter, "timeline %s: start at %s\n", name, t.start.UTC().Format(time.RFC3339Nano))
	return t
}

// mark prints one step and returns its time.
func (t *timeline) mark(format string, args ...any) time.Time {
	now := time.Now()
	fmt.Fprintf(GinkgoWriter, "timeline %s: +%7.1fs %s %s\n", t.name, now.Sub(t.start).Seconds(), now.UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	return now
}

// adapterPodUIDs returns the UIDs of the adapter's pods that are not being deleted.
func adapterPodUIDs(ctx context.Context, c client.Client, ns, name string) []types.UID {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	var uids []types.UID
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			uids = append(uids, p.UID)
		}
	}
	return uids
}

// adapterPodsReady reports whether the adapter runs exactly one pod, ready, none of whose UIDs
// is in old.
func adapterPodsReady(ctx context.Context, c client.Client, ns, name string, old []types.UID) (bool, string) {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	if len(pods.Items) != 1 {
		return false, fmt.Sprintf("%d adapter pods", len(pods.Items))
	}
	p := pods.Items[0]
	for _, u := range old {
		if p.UID == u {
			return false, "still the old pod " + p.Name
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return true, p.Name
		}
	}
	return false, fmt.Sprintf("pod %s not ready: %+v", p.Name, p.Status.ContainerStatuses)
}

// watchingAgentPod is a workload bound to adapter (the label and the requirements send it
// through the operator's webhook, which projects the binding and gates it until the adapter
// is Available) that runs
// `agent-check --watch`: it stores an item every two seconds through the adapter's Service
// and logs each answer's status and problem type, until the spec ends.
func watchingAgentPod(ns, adapter string, extra ...string) *corev1.Pod {
	return agentPod(ns, adapter+"-watcher", adapter, adapterImage,
		append([]string{"agent-check", "--adapter=" + adapter, "--watch", "--interval=2s", "--timeout=30m"}, extra...))
}

// pythonAgentPod is the Python agent (python3 -m memory_adapter_client.agent in Debian's
// python3, pythonAgentImage): one long-lived store from from_binding that stores and reads
// back every two seconds, printing agent-check --watch's lines.
func pythonAgentPod(ns, adapter string) *corev1.Pod {
	return agentPod(ns, adapter+"-py-watcher", adapter, pythonAgentImage,
		[]string{"-m", "memory_adapter_client.agent", "--adapter", adapter, "--interval", "2", "--timeout", "1800", "--read-back"})
}

// agentPod is a bound agent pod named name running image with args.
func agentPod(ns, name, adapter, image string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"memory.agentmem.io/adapter": adapter},
			// The webhook binds only pods that state requirements; every adapter of these
			// specs claims immediate search.
			Annotations: map[string]string{"memory.agentmem.io/requires": "searchConsistency=immediate"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "agent", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            args,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// startWatchingAgent creates the watching agent while the adapter is Available (a pod created
// later would stay gated: the point is a workload already running when the fault comes) and
// waits for its first stored item.
func startWatchingAgent(ctx context.Context, c client.Client, ns, adapter string, extra ...string) string {
	GinkgoHelper()
	return startWatchingAgentOn(ctx, c, ns, adapter, "", extra...)
}

// startWatchingAgentOn is startWatchingAgent with the agent on node (any node for ""): the
// multi-node specs keep the client off the node they take away.
func startWatchingAgentOn(ctx context.Context, c client.Client, ns, adapter, node string, extra ...string) string {
	GinkgoHelper()
	return startAgentPod(ctx, c, watchingAgentPod(ns, adapter, extra...), node)
}

// startAgentPod creates pod on node (any node for "") and waits for its first stored item.
func startAgentPod(ctx context.Context, c client.Client, pod *corev1.Pod, node string) string {
	GinkgoHelper()
	ns := pod.Namespace
	if node != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, pod) })
	Eventually(func(g Gomega) {
		answers := agentAnswers(ctx, ns, pod.Name, time.Time{})
		g.Expect(answers).To(ContainElement(HaveField("Answer", HavePrefix("201 "))), "the agent stored nothing yet")
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	return pod.Name
}

// agentAnswer is one line of `agent-check --watch`: when the call was made, which call
// ("store", or "retrieve" with --read-back) and what it got ("503 application/problem+json
// unavailable", "201 application/json -", "error: ...").
type agentAnswer struct {
	At     time.Time
	Op     string
	Answer string
	// Detail is a problem answer's detail, for failure messages; Answer leaves it out so it
	// compares to a fixed string.
	Detail string
}

// agentAnswers reads the watching agent's log and returns its answers made at or after since.
func agentAnswers(ctx context.Context, ns, pod string, since time.Time) []agentAnswer {
	GinkgoHelper()
	raw, err := clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return nil // not started yet; the callers wait with Eventually
	}
	var out []agentAnswer
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "agent-check watch: ")
		if !ok {
			continue
		}
		ts, call, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		op, answer, ok := strings.Cut(call, " ")
		if !ok || (op != "store" && op != "retrieve") {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		Expect(err).NotTo(HaveOccurred(), "agent line %q", line)
		if !at.Before(since) {
			answer, detail, _ := strings.Cut(answer, " | ")
			out = append(out, agentAnswer{At: at, Op: op, Answer: answer, Detail: detail})
		}
	}
	return out
}

// storedIDs are the ids of the items the agent's answers acknowledged (201 store lines end in
// " | id=<id>").
func storedIDs(answers []agentAnswer) []string {
	var ids []string
	for _, a := range answers {
		if id, ok := strings.CutPrefix(a.Detail, "id="); ok && a.Op == "store" && strings.HasPrefix(a.Answer, "201 ") {
			ids = append(ids, id)
		}
	}
	return ids
}

// countLostWrites reads back every acknowledged id through adapter from a one-shot bound pod
// (agent-check --retrieve-ids) and returns how many came back intact and how many are gone
// or changed: the lost writes of a fault. A run in which some call failed (the adapter not
// yet serving again) proves nothing and is made again, for up to three minutes.
func countLostWrites(ctx context.Context, c client.Client, ns, adapter string, ids []string) (found, missing int) {
	GinkgoHelper()
	return countLostWritesAs(ctx, c, ns, adapter, "", ids)
}

// countLostWritesAs is countLostWrites from a pod running as ServiceAccount sa ("" for the
// namespace's default): what that ServiceAccount's binding reads of the items.
func countLostWritesAs(ctx context.Context, c client.Client, ns, adapter, sa string, ids []string) (found, missing int) {
	GinkgoHelper()
	Expect(ids).NotTo(BeEmpty(), "no acknowledged write to read back")
	attempt := 0
	Eventually(func(g Gomega) {
		attempt++
		pod := agentPod(ns, fmt.Sprintf("%s-readback-%s%d", adapter, sa, attempt), adapter, adapterImage,
			[]string{"agent-check", "--adapter=" + adapter, "--retrieve-ids=" + strings.Join(ids, ","), "--timeout=2m"})
		pod.Spec.ServiceAccountName = sa
		// Bound with no requirement: it reads whatever the adapter claims.
		pod.Annotations["memory.agentmem.io/requires"] = ""
		g.Expect(c.Create(ctx, pod)).To(Succeed())
		defer func() { _ = c.Delete(context.Background(), pod) }()
		g.Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		raw, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var n, f, m, x, e int
		var summary string
		for _, line := range strings.Split(string(raw), "\n") {
			if _, err := fmt.Sscanf(line, "agent-check retrieve: %d ids, %d found, %d missing, %d mismatched, %d errors", &n, &f, &m, &x, &e); err == nil {
				summary = line
			}
		}
		g.Expect(summary).NotTo(BeEmpty(), "no summary line in the read-back pod's log:\n%s", raw)
		g.Expect(n).To(Equal(len(ids)), summary)
		g.Expect(e).To(BeZero(), "some reads failed, so they prove nothing: %s\n%s", summary, raw)
		found, missing = f, m+x
	}).WithContext(ctx).WithTimeout(6 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	return found, missing
}

// typedUnavailable is the answer the contract promises a workload while its adapter's
// manifest is invalidated: 503 with an application/problem+json body of type unavailable.
const typedUnavailable = "503 application/problem+json unavailable"

// summarizeAnswers counts answers by their text, for the timeline.
func summarizeAnswers(answers []agentAnswer) string {
	counts := map[string]int{}
	var order []string
	for _, a := range answers {
		k := a.Op + " " + a.Answer
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d x %q", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// host runs a command on the host (the tests run as root) and fails the spec if it fails.
func host(ctx context.Context, name string, args ...string) {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %s:\n%s", name, strings.Join(args, " "), out)
}

// ext4Claim prepares the volume of SQLite adapter name the way a node-local volume is in
// production: a 16 MiB ext4 filesystem (an image file on a loop device) mounted on the host
// with errors=remount-ro, a PersistentVolume on it and the claim the operator would create
// (<name>-data) bound to it, created before the adapter so the operator adopts the claim as it
// is. A filesystem of our own is what lets a spec fill the volume, and make it go read-only
// under a running writer through the kernel's own error path (goReadOnly): a volume cannot be
// remounted read-only while a writer holds files open (EBUSY), and a read-only bind mount does
// not reach already-open files. The cleanup always unmounts and detaches the loop device, also
// after a failed spec, once the adapter's pods are gone (the MemoryAdapter is deleted by a
// cleanup that runs before these). It returns the host directory and the loop device.
func ext4Claim(ctx context.Context, c client.Client, ns, name string) (dir, loop string) {
	GinkgoHelper()
	dir, err := os.MkdirTemp("/var/tmp", "mao-e2e-"+name+"-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Chmod(dir, 0o755)).To(Succeed())
	img := dir + ".img"
	Expect(os.WriteFile(img, nil, 0o600)).To(Succeed())
	Expect(os.Truncate(img, 16<<20)).To(Succeed())
	out, err := exec.CommandContext(ctx, "losetup", "--find", "--show", img).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "losetup --find --show %s: %s", img, out)
	loop = strings.TrimSpace(string(out))
	DeferCleanup(func(ctx SpecContext) {
		// Lazily, twice: a read-only bind mount may still be stacked on the filesystem. A loop
		// device still in use is freed once its last user goes (the kernel's autoclear).
		for range 2 {
			_ = exec.CommandContext(ctx, "umount", "-l", dir).Run()
		}
		if out, err := exec.CommandContext(ctx, "losetup", "-d", loop).CombinedOutput(); err != nil {
			Fail(fmt.Sprintf("losetup -d %s: %v: %s", loop, err, out))
		}
		_ = os.Remove(img)
		_ = os.Remove(dir)
	})
	host(ctx, "mkfs.ext4", "-q", "-F", loop)
	mountExt4(ctx, loop, dir)
	DeferCleanup(func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "the adapter's pods still hold the volume")
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
	size := resource.MustParse("16Mi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + name + "-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name + "-data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
		},
	}
	Expect(c.Create(ctx, pv)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, pv) })
	Expect(c.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	})).To(Succeed())
	return dir, loop
}

// mountExt4 mounts the ext4 filesystem on loop at dir with errors=remount-ro, the way a node
// mounts a data disk, and opens its root to everyone: the adapter runs as a non-root user, and
// a hostPath volume gets no fsGroup.
func mountExt4(ctx context.Context, loop, dir string) {
	GinkgoHelper()
	host(ctx, "mount", "-t", "ext4", "-o", "errors=remount-ro", loop, dir)
	Expect(os.Chmod(dir, 0o777)).To(Succeed())
}

// goReadOnly makes the ext4 filesystem on loop go read-only under whoever writes to it,
// through the kernel's own error path: trigger_fs_error records a filesystem error as a
// failed metadata check would, and errors=remount-ro turns the filesystem read-only at once
// (the kernel marks it emergency_ro; open files stay open and every write fails with EROFS).
// It returns the mount line the host shows afterwards.
func goReadOnly(loop, dir string) string {
	GinkgoHelper()
	Expect(os.WriteFile(filepath.Join("/sys/fs/ext4", filepath.Base(loop), "trigger_fs_error"), []byte("1"), 0)).To(Succeed())
	f := filepath.Join(dir, "e2e-probe")
	err := os.WriteFile(f, []byte("x"), 0o600)
	Expect(err).To(MatchError(syscall.EROFS), "the filesystem still takes writes after the error")
	mounts, err := os.ReadFile("/proc/self/mounts")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.HasPrefix(line, loop+" ") {
			return line
		}
	}
	Fail(loop + " is not mounted any more")
	return ""
}

// repairExt4 is what an administrator does to a filesystem an error made read-only, once no
// pod uses it: the kernel refuses to remount it read-write, so it is unmounted, checked and
// repaired (e2fsck exits 0 when it found nothing, 1 when it corrected something) and mounted
// again. It returns e2fsck's exit code.
func repairExt4(ctx context.Context, loop, dir string) int {
	GinkgoHelper()
	host(ctx, "umount", dir)
	out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-y", loop).CombinedOutput()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "e2fsck: %v", err)
		code = exit.ExitCode()
	}
	Expect(code).To(BeNumerically("<=", 1), "e2fsck -f -y %s left errors:\n%s", loop, out)
	fmt.Fprintf(GinkgoWriter, "e2fsck -f -y %s (exit %d):\n%s", loop, code, out)
	mountExt4(ctx, loop, dir)
	return code
}

// fillUp writes zeros to a file in dir until the filesystem is full (ENOSPC), as a volume
// fills up under a running writer, and returns the file.
func fillUp(dir string) string {
	GinkgoHelper()
	path := filepath.Join(dir, "e2e-filler")
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC: the volume is full
		}
	}
	_ = f.Close()
	return path
}

// ownWriteProbe reads the evidence of the adapter's one pod from the pod itself (not the
// operator's copy in the conditions, which may still be an earlier pod's) and returns the
// pod's name and its write probe.
func ownWriteProbe(ctx context.Context, g Gomega, c client.Client, ns, name string) (string, memory.ProbeResult) {
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	p := pods.Items[0]
	g.Expect(p.Status.PodIP).NotTo(BeEmpty(), "pod %s has no address yet", p.Name)
	// The adapter's token, from its binding Secret, as the operator and a bound workload use it.
	sec := &corev1.Secret{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-binding"}, sec)).To(Succeed())
	hc, scheme := adapterHTTPClient(g, sec, ns, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s/v1/evidence", scheme, net.JoinHostPort(p.Status.PodIP, "8080")), nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+string(sec.Data["token"]))
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", req.URL, body)
	var ev memory.EvidenceReport
	g.Expect(json.Unmarshal(body, &ev)).To(Succeed())
	for _, probe := range ev.Probes {
		if probe.Name == "write" {
			return p.Name, probe
		}
	}
	g.Expect(ev.Probes).To(ContainElement(HaveField("Name", "write")), "pod %s's evidence", p.Name)
	return p.Name, memory.ProbeResult{}
}

// expectWriteProbeFailed checks that Healthy and Available are False on the failed write
// probe (Healthy's reason is the failed capability probe, or the adapter's own invalidation
// naming it), and returns Healthy's message.
func expectWriteProbeFailed(ctx context.Context, g Gomega, c client.Client, ns, name string) string {
	h := condition(ctx, c, ns, name, memoryv1alpha1.ConditionHealthy)
	g.Expect(h.Status).To(Equal(metav1.ConditionFalse), "Healthy %s: %s", h.Reason, h.Message)
	g.Expect(h.Reason).To(BeElementOf(memoryv1alpha1.ReasonCapabilityProbeFailed, memoryv1alpha1.ReasonEvidenceInvalidatesManifest))
	g.Expect(h.Message).To(ContainSubstring("write"))
	a := condition(ctx, c, ns, name, memoryv1alpha1.ConditionAvailable)
	g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(a.Reason).To(Equal(h.Reason), "Available names the evidence, not a Deployment reason: %s", a.Message)
	return h.Message
}

// doorbellRings scrapes the adapter's pods' metrics port for memory_adapter_doorbell_rings_total
// and sums it by result: the rings that reached the elected manager ("accepted") and those that
// did not after every retry ("failed").
func doorbellRings(ctx context.Context, g Gomega, c client.Client, ns, name string) map[string]float64 {
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty())
	out := map[string]float64{}
	for _, p := range pods.Items {
		g.Expect(p.Status.PodIP).NotTo(BeEmpty(), "pod %s has no address yet", p.Name)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(p.Status.PodIP, "9090")+"/metrics", nil)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s", req.URL)
		for _, line := range strings.Split(string(body), "\n") {
			rest, ok := strings.CutPrefix(line, `memory_adapter_doorbell_rings_total{result="`)
			if !ok {
				continue
			}
			result, value, _ := strings.Cut(rest, `"} `)
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			g.Expect(err).NotTo(HaveOccurred(), "metric line %q", line)
			out[result] += v
		}
	}
	return out
}
