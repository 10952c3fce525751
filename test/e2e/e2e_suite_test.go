//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Image names are the ones the Dockerfile and the Makefile produce.
const (
	adapterImage = "ghcr.io/agentmem/memory-adapter:dev"
	managerImage = "ghcr.io/agentmem/memory-adapter-operator:dev"
	// pythonAgentImage is make images' PY_AGENT_IMG: Debian's python3 and clients/python,
	// for pods that run `python3 -m memory_adapter_client.agent` (its entrypoint is
	// /usr/bin/python3, so a pod's args start with -m).
	pythonAgentImage = "ghcr.io/agentmem/python-agent:dev"
	nodeName         = "mao-node"
	bridgeName       = "mao0"
	podCIDR          = "10.244.0.0/24"
	serviceCIDR      = "10.96.0.0/24"
	clusterDNSIP     = "10.96.0.10"
)

// longSpec marks a spec of a minute or more that runs beside others, or an ordered group whose
// specs add up to that: Ginkgo hands these out first, so that none of them starts last and
// runs alone at the end of the parallel phase.
const longSpec SpecPriority = 1

// longestSpec marks the three groups of three to five minutes (Patroni's failovers, the
// host PostgreSQL's outage, the read-only SQLite volume): handed out before the other long
// ones, they start together on the three processes instead of one of them starting after
// several shorter ones and running alone at the end (in one CI run Patroni's group started
// at 508 s, after five shorter ones on its process, and ran alone from 611 s to 805 s).
const longestSpec SpecPriority = 2

var (
	repoRoot       string
	clusterDir     string
	restConfig     *rest.Config
	clientset      *kubernetes.Clientset
	namespace      string
	startedCluster bool
	// pauseImage and helperImage are the cluster's own images, named from hack/versions.env
	// as hack/cluster-up.sh names them: the pod sandbox, and Debian's busybox-static (the
	// local-path-provisioner's helper image, the one image of the cluster with a shell).
	pauseImage  string
	helperImage string
	// nodeIP is the node's InternalIP: the host address pods reach the host's servers on.
	nodeIP string
)

// readVersions parses hack/versions.env (KEY=value lines; # comments) with the environment
// overriding it, as hack/versions.sh does for the scripts.
func readVersions(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: not KEY=value: %q", path, line)
		}
		if env := os.Getenv(k); env != "" {
			v = env
		}
		out[k] = v
	}
	return out, nil
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "End-to-end suite (real local cluster)")
}

// The failure digest repeats each failed spec's message, which Ginkgo's closing summary does
// not (it names only the failing line), so that a log cut to its last lines (a CI report)
// still says why each spec failed, and the seed to rerun it with. Under --procs the test
// processes' own output never reaches the terminal (the CLI prints only their reports), so
// the digest goes to the file MAO_E2E_FAILURES names, which the Makefile prints after a
// failed run, and hack/ci.sh again at its very end; without the variable, to GinkgoWriter.
var _ = ReportAfterSuite("failure digest", func(r Report) {
	digest := failureDigest(r)
	path := os.Getenv("MAO_E2E_FAILURES")
	if path == "" {
		_, _ = io.WriteString(GinkgoWriter, digest)
		return
	}
	Expect(os.WriteFile(path, []byte(digest), 0o600)).To(Succeed())
})

// failureDigest is one line per failed spec of r (its text, state, failing line and message,
// the message cut to 1,500 characters), or "" when none failed.
func failureDigest(r Report) string {
	var b strings.Builder
	for _, s := range r.SpecReports {
		if !s.Failed() {
			continue
		}
		if b.Len() == 0 {
			_, _ = fmt.Fprintf(&b, "Failure digest (random seed %d; rerun with --seed=%d):\n", r.SuiteConfig.RandomSeed, r.SuiteConfig.RandomSeed)
		}
		msg := strings.Join(strings.Fields(s.Failure.Message), " ")
		if len(msg) > 1500 {
			msg = msg[:1500] + "..."
		}
		name := s.FullText()
		if name == "" {
			name = s.LeafNodeType.String() // a suite node: BeforeSuite, AfterSuite, ...
		}
		_, _ = fmt.Fprintf(&b, "- %s [%s] at %s:%d: %s\n", name, s.State, filepath.Base(s.Failure.Location.FileName), s.Failure.Location.LineNumber, msg)
	}
	return b.String()
}

// run executes a command from the repository root, streaming its output into the Ginkgo
// log so a failing cluster-up is diagnosable from the test output alone.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = GinkgoWriter
	err := cmd.Run()
	return out.String(), err
}

// The suite runs on Ginkgo's parallel processes (make test-e2e: the ginkgo CLI with
// E2E_PROCS): the first process brings the cluster up, loads the images and installs the
// operator once; every process then connects and makes a namespace of its own. Specs that
// stop the manager, change its flags, or stop, cut or cordon a node are Serial: Ginkgo runs
// them on the first process once every other spec has finished, so no spec sees another's
// disruption.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	initSuite()
	// Whether a cluster is already running decides whether we tear it down afterwards.
	tool := filepath.Join(GinkgoT().TempDir(), "cluster")
	_, err := run(ctx, "go", "build", "-o", tool, "./hack/cluster")
	Expect(err).NotTo(HaveOccurred(), "building hack/cluster")
	_, statusErr := run(ctx, tool, "status")
	started := statusErr != nil
	By(fmt.Sprintf("bringing the cluster up (already running: %v)", !started))
	out, err := run(ctx, "bash", "hack/cluster-up.sh")
	Expect(err).NotTo(HaveOccurred(), "hack/cluster-up.sh failed; its output is above")
	Expect(out).To(ContainSubstring("export KUBECONFIG="))

	By("building the adapter, manager and Python agent images and loading them into every node's containerd")
	pyRoot := filepath.Join(clusterDir, "images", "python-agent-rootfs")
	_, err = run(ctx, "bash", "hack/python-agent-rootfs.sh", pyRoot)
	Expect(err).NotTo(HaveOccurred(), "hack/python-agent-rootfs.sh failed; its output is above")
	_, err = run(ctx, filepath.Join(clusterDir, "tools", "images"),
		"-out", filepath.Join(clusterDir, "images"),
		"-load", containerdSockets(ctx),
		adapterImage+"=./cmd/memory-adapter:/memory-adapter", managerImage+"=./cmd:/manager",
		pythonAgentImage+"=%"+pyRoot+":/usr/bin/python3")
	Expect(err).NotTo(HaveOccurred(), "building/loading images")

	connect(ctx)
	installOperator(ctx)
	if started {
		return []byte("started")
	}
	return nil
}, func(ctx SpecContext, data []byte) {
	initSuite()
	startedCluster = string(data) == "started"
	connect(ctx)

	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	namespace = ns.Name
	// The ServiceAccount admission plugin rejects pods until the namespace's default
	// service account exists.
	Eventually(func(g Gomega) {
		_, err := clientset.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}, NodeTimeout(60*time.Minute))

// initSuite reads what every process needs before it touches the cluster: the repository,
// the cluster's state directory and the cluster's own image names.
func initSuite() {
	GinkgoHelper()
	// controller-runtime's client logs through its own logger; without one set it prints a
	// stack trace that reads like a failure.
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	var err error
	repoRoot, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	clusterDir = os.Getenv("MAO_CLUSTER_DIR")
	if clusterDir == "" {
		clusterDir = "/var/tmp/mao-cluster"
	}
	Expect(os.Geteuid()).To(BeZero(), "the e2e suite starts containerd, a kubelet and iptables rules: run it as root")
	versions, err := readVersions(filepath.Join(repoRoot, "hack", "versions.env"))
	Expect(err).NotTo(HaveOccurred())
	pauseImage = versions["PAUSE_IMAGE"]
	helperImage = "mao.local/busybox-static:" + versions["BUSYBOX_VERSION"]
	Expect(pauseImage).NotTo(BeEmpty())
	Expect(versions["BUSYBOX_VERSION"]).NotTo(BeEmpty())
}

// connect builds the clients from the cluster's admin kubeconfig and reads the first node's
// InternalIP, the host address pods reach the host's servers on.
func connect(ctx context.Context) {
	GinkgoHelper()
	var err error
	restConfig, err = clientcmd.BuildConfigFromFlags("", filepath.Join(clusterDir, "admin.kubeconfig"))
	Expect(err).NotTo(HaveOccurred())
	restConfig.QPS, restConfig.Burst = 50, 100
	clientset, err = kubernetes.NewForConfig(restConfig)
	Expect(err).NotTo(HaveOccurred())

	node, err := clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(node.Status.NodeInfo.ContainerRuntimeVersion).To(HavePrefix("containerd://"))
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	Expect(nodeIP).NotTo(BeEmpty(), "node %s has no InternalIP", nodeName)
}

// containerdSockets are the containerd sockets of the cluster's nodes, comma-separated, as
// the images tool's -load takes them: a node without an image could never start its pod.
func containerdSockets(ctx context.Context) string {
	GinkgoHelper()
	out, err := clusterTool(ctx, "sockets")
	Expect(err).NotTo(HaveOccurred(), "listing the nodes' containerd sockets")
	return strings.TrimSpace(out)
}

var _ = SynchronizedAfterSuite(func(ctx SpecContext) {
	if clientset != nil && namespace != "" {
		_ = clientset.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
	}
}, func(ctx SpecContext) {
	// Every spec's namespace is gone by now, so make undeploy must remove it all; a cluster
	// that stays up is left without the suite's operator, for the next run to install its own.
	if clientset != nil {
		uninstallOperator(ctx)
	}
	if !startedCluster {
		By("leaving the cluster running: it was up before the suite started")
		return
	}
	if os.Getenv("KEEP_CLUSTER") == "1" {
		By("KEEP_CLUSTER=1: leaving the cluster running")
		return
	}
	By("tearing the cluster down")
	_, err := run(ctx, "bash", "hack/cluster-down.sh")
	Expect(err).NotTo(HaveOccurred(), "hack/cluster-down.sh failed")

	By("checking that no process, mount, iptables rule or bridge of the cluster remains")
	Expect(leftovers()).To(BeEmpty())
}, NodeTimeout(15*time.Minute))

// leftovers inspects the host directly, independently of the cluster tool's own check.
func leftovers() []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	self := fmt.Sprint(os.Getpid())
	for _, p := range procs {
		if filepath.Base(p) == self {
			continue
		}
		cmdline, err := os.ReadFile(p + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		cl := strings.ReplaceAll(string(cmdline), "\x00", " ")
		cg, _ := os.ReadFile(p + "/cgroup")
		// The state directory, not the binary directory: that one is the shared envtest cache,
		// and other test runs' etcd and kube-apiserver start from it too.
		if strings.Contains(cl, clusterDir+"/") ||
			strings.Contains(string(cg), "/kubepods") {
			left = append(left, fmt.Sprintf("process %s: %.150s", filepath.Base(p), cl))
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && (fields[4] == clusterDir || strings.HasPrefix(fields[4], clusterDir+"/")) {
				left = append(left, "mount "+fields[4])
			}
		}
		_ = f.Close()
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(tool).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			// MAO- and the queue: the NetworkPolicy agent's chain and the rules feeding it.
			if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") || strings.Contains(line, "MAO-") ||
				strings.Contains(line, "NFQUEUE --queue-num "+netpolQueue) || strings.Contains(line, bridgeName) ||
				strings.Contains(line, podCIDR) || strings.Contains(line, serviceCIDR) {
				left = append(left, tool+": "+line)
			}
		}
	}
	if exec.Command("ip", "link", "show", bridgeName).Run() == nil {
		left = append(left, "bridge "+bridgeName)
	}
	return left
}
