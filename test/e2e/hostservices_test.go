//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Backends on the host, for pods: the throwaway PostgreSQL and Redis servers of
// hack/postgres-server.sh and hack/redis-server.sh run as host processes, listening (with
// LISTEN_ADDR) on the node's address besides loopback; a Service without a selector plus an
// EndpointSlice naming that address makes them <name>.<namespace>.svc.cluster.local inside the
// cluster, as an external database is on a real one. Only the node's own address is ever a
// target.

// startHostServer runs `script start DIR` with LISTEN_ADDR set to the node's address and
// returns the value of the line starting with prefix, and a stop func that runs
// `script stop DIR` and removes DIR.
func startHostServer(ctx context.Context, script, prefix string) (string, func()) {
	GinkgoHelper()
	Expect(nodeIP).NotTo(BeEmpty(), "BeforeSuite finds the node address first")
	// The PostgreSQL server runs as the postgres user, which must be able to enter the
	// directory (MkdirTemp makes it 0700).
	dir, err := os.MkdirTemp("", "mao-e2e-host-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Chmod(dir, 0o755)).To(Succeed())
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", script), "start", filepath.Join(dir, "server"))
	cmd.Env = append(os.Environ(), "LISTEN_ADDR="+nodeIP)
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "hack/%s start failed; its output is above", script)
	stop := func() {
		c := exec.Command(filepath.Join(repoRoot, "hack", script), "stop", filepath.Join(dir, "server"))
		c.Stdout, c.Stderr = GinkgoWriter, GinkgoWriter
		if err := c.Run(); err != nil {
			fmt.Fprintf(GinkgoWriter, "hack/%s stop: %v\n", script, err)
		}
		_ = os.RemoveAll(dir)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return v, stop
		}
	}
	stop()
	Fail(fmt.Sprintf("hack/%s start printed no %s line", script, prefix))
	return "", nil
}

// startHostPostgres starts a throwaway PostgreSQL server on the host, listening on loopback
// and the node's address, and returns its DSN with the node's address as host (so it works
// from pods once exposed with exposeHostService) and a func that stops it. The password in
// the DSN is random per server.
func startHostPostgres(ctx context.Context) (dsn string, stop func()) {
	GinkgoHelper()
	return startHostServer(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
}

// startHostRedis starts a throwaway password-protected Redis server on the host, listening on
// loopback and the node's address, and returns its redis:// URL with the node's address as
// host and a func that stops it.
func startHostRedis(ctx context.Context) (redisURL string, stop func()) {
	GinkgoHelper()
	return startHostServer(ctx, "redis-server.sh", "MAO_TEST_REDIS_LISTEN_URL=")
}

// exposeHostService makes port on the node's address reachable from pods as
// <name>.<ns>.svc.cluster.local:<port> (and the Service's ClusterIP): a Service without a
// selector, so no controller manages its endpoints, and one EndpointSlice naming the node's
// address, which kube-proxy programs like any other. It returns the in-cluster host:port.
func exposeHostService(ctx context.Context, ns, name string, port int32) string {
	GinkgoHelper()
	_, err := clientset.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "tcp", Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = clientset.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name,
			// Not the endpointslice controller's: it leaves slices it does not manage alone.
			discoveryv1.LabelManagedBy: "e2e.memory.agentmem.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{nodeIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(nodeName),
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("tcp"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return net.JoinHostPort(fmt.Sprintf("%s.%s.svc.cluster.local", name, ns), strconv.Itoa(int(port)))
}

// withHost returns rawURL with its host:port replaced, keeping user, password, path and query.
func withHost(rawURL, hostPort string) string {
	GinkgoHelper()
	u, err := url.Parse(rawURL)
	Expect(err).NotTo(HaveOccurred(), "parsing a connection URL (not shown: it holds a password)")
	u.Host = hostPort
	return u.String()
}

// urlPort is the port of a connection URL.
func urlPort(rawURL string) int32 {
	GinkgoHelper()
	u, err := url.Parse(rawURL)
	Expect(err).NotTo(HaveOccurred(), "parsing a connection URL (not shown: it holds a password)")
	p, err := strconv.ParseInt(u.Port(), 10, 32)
	Expect(err).NotTo(HaveOccurred())
	return int32(p)
}

var _ = Describe("host backends reached from pods through a Service without a selector", Ordered, func() {
	AfterEach(func() { printDiagnostics(namespace) })

	// serveThrough runs `memory-adapter serve --backend <backend>` in a pod with the connection
	// string in a Secret, and checks that the adapter becomes Ready (its /readyz probes the
	// backend) and that its evidence, read from the host, shows a live backend.
	serveThrough := func(ctx context.Context, backend, connection string) {
		GinkgoHelper()
		name := "adapter-" + backend
		_, err := clientset.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			StringData: map[string]string{"dsn": connection},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = clientset.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels(name)},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{
					Name: "adapter", Image: adapterImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Args: []string{"serve", "--backend", backend, "--connection-file", "/etc/memory-adapter/dsn",
						"--scope", "e2e" + backend, "--listen", ":8080", "--insecure-no-token"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
						PeriodSeconds: 2,
					},
					VolumeMounts:    []corev1.VolumeMount{{Name: "connection", MountPath: "/etc/memory-adapter", ReadOnly: true}},
					SecurityContext: hardened(),
				}},
				Volumes: []corev1.Volume{{Name: "connection", VolumeSource: corev1.VolumeSource{
					Secret: &corev1.SecretVolumeSource{SecretName: name}}}},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By(backend + ": waiting for the adapter pod to be Ready (its /readyz probes the backend)")
		var podIP string
		Eventually(func(g Gomega) {
			p, err := clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s: %+v", name, p.Status.ContainerStatuses)
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
			podIP = p.Status.PodIP
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())

		By(backend + ": reading the adapter's evidence from the host: a live backend, a valid manifest")
		var ev memory.EvidenceReport
		Eventually(func(g Gomega) {
			g.Expect(json.Unmarshal(httpGet(g, fmt.Sprintf("http://%s/v1/evidence", net.JoinHostPort(podIP, "8080"))), &ev)).To(Succeed())
			g.Expect(ev.ManifestValid).To(BeTrue(), "evidence: %+v", ev)
			g.Expect(ev.ServiceVersion).NotTo(BeEmpty())
		}).WithTimeout(serviceDeadline).WithPolling(poll).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "%s adapter in a pod sees backend service version %q\n", backend, ev.ServiceVersion)
	}

	for _, b := range []struct {
		backend, service, what string
		start                  func(context.Context) (string, func())
	}{
		{"postgres", "host-postgres", "PostgreSQL", startHostPostgres},
		{"redis", "host-redis", "Redis", startHostRedis},
	} {
		It("serves a "+b.what+" adapter from a pod against the host's throwaway server", func(ctx SpecContext) {
			connection, stop := b.start(ctx)
			DeferCleanup(stop)
			inCluster := exposeHostService(ctx, namespace, b.service, urlPort(connection))
			serveThrough(ctx, b.backend, withHost(connection, inCluster))
		}, SpecTimeout(10*time.Minute))
	}
})
