package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (c *cluster) bin(name string) (string, error) {
	if c.binDir == "" {
		return "", errors.New("no binary directory: pass -bin-dir or set MAO_K8S_BIN_DIR (hack/cluster-up.sh does)")
	}
	p := filepath.Join(c.binDir, name)
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is missing or not executable (build it with hack/k8s-binaries.sh %s)", p, name)
	}
	return p, nil
}

// up brings every component up in dependency order, waiting for each to be healthy before
// starting the next, so a failure names the component that failed and its log file.
func (c *cluster) up(ctx context.Context, images []string) error {
	start := time.Now()
	if os.Geteuid() != 0 {
		return errors.New("the cluster needs root (containerd, runc, iptables, mounts)")
	}
	bins := map[string]string{}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"} {
		p, err := c.bin(b)
		if err != nil {
			return err
		}
		bins[b] = p
	}
	tools := []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip"}
	if len(c.nodes()) > 1 {
		tools = append(tools, "unshare", "nsenter") // util-linux: the further nodes' namespaces
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found in PATH (hack/cluster-up.sh installs it with apt)", tool)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			return fmt.Errorf("CNI plugin %s missing in %s (apt-get install containernetworking-plugins)", p, cniBinDir)
		}
	}
	if !c.anyRunning() {
		// Nothing of ours runs: whatever a crash or a killed session left behind (stale
		// etcd data, mounts, rules, the bridge) is removed so the cluster starts fresh.
		if err := c.down(ctx); err != nil {
			return fmt.Errorf("cleaning up a previous cluster before starting: %w", err)
		}
	}
	for _, d := range []string{"run", "logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			return err
		}
	}
	c.logf("state directory %s, node %s (%s), %d node(s)", c.dir, nodeName, c.nodeIP, len(c.nodes()))
	if err := c.ensurePKI(); err != nil {
		return err
	}
	if err := c.checkPorts(); err != nil {
		return err
	}
	if err := c.rememberIPForward(); err != nil {
		return err
	}

	// etcd
	if err := c.start("etcd", bins["etcd"],
		"--name=mao", "--data-dir="+filepath.Join(c.dir, "etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdPort),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-cluster=mao=http://127.0.0.1:%d", etcdPeerPort),
		"--log-level=warn",
	); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "etcd", fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort), nil, time.Minute); err != nil {
		return err
	}

	// kube-apiserver
	pki := c.pkiDir()
	if err := c.start("kube-apiserver", bins["kube-apiserver"],
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address="+c.nodeIP, "--advertise-address="+c.nodeIP, fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--kubelet-client-certificate="+filepath.Join(pki, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+filepath.Join(pki, "ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc."+clusterDomain,
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--anonymous-auth=false",
		"--allow-privileged=true",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.apiURL()+"/readyz", c.adminTLS(), 2*time.Minute); err != nil {
		return err
	}

	// controllers and scheduler
	if err := c.start("kube-controller-manager", bins["kube-controller-manager"],
		"--kubeconfig="+filepath.Join(c.dir, "controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+filepath.Join(c.dir, "controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+filepath.Join(c.dir, "controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kcmPort),
		"--cert-dir="+filepath.Join(c.dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--allocate-node-cidrs=false",
		// What the operator and its workloads use, plus the housekeeping a namespace needs
		// (service accounts, root CA config map, garbage collection of owned children).
		"--controllers=deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller,"+
			"job-controller,cronjob-controller,ttl-after-finished-controller,endpoints-controller,"+
			"endpointslice-controller,endpointslice-mirroring-controller,garbage-collector-controller,"+
			"namespace-controller,node-lifecycle-controller,taint-eviction-controller,pod-garbage-collector-controller,"+
			"serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,"+
			"resourcequota-controller,disruption-controller,clusterrole-aggregation-controller,service-cidr-controller,"+
			"persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := c.start("kube-scheduler", bins["kube-scheduler"],
		"--kubeconfig="+filepath.Join(c.dir, "scheduler.kubeconfig"),
		"--authentication-kubeconfig="+filepath.Join(c.dir, "scheduler.kubeconfig"),
		"--authorization-kubeconfig="+filepath.Join(c.dir, "scheduler.kubeconfig"),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedPort),
		"--cert-dir="+filepath.Join(c.dir, "scheduler-certs"),
		"--leader-elect=false",
		"--profiling=false",
	); err != nil {
		return err
	}
	insecureLocal := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed local health endpoint, no data exchanged
	if err := c.waitHTTP(ctx, "kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), insecureLocal, time.Minute); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "kube-scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort), insecureLocal, time.Minute); err != nil {
		return err
	}

	// The nodes: the host's first, then each node in its own network namespace.
	if err := writeFileAtomic(c.nodeCountFile(), []byte(strconv.Itoa(len(c.nodes()))+"\n"), 0o644); err != nil {
		return err
	}
	for _, n := range c.nodes() {
		if err := c.upNode(ctx, n, bins, images); err != nil {
			return err
		}
	}
	if err := c.waitAPIObject(ctx, "default service account (serviceaccount controller)", "/api/v1/namespaces/default/serviceaccounts/default", 2*time.Minute); err != nil {
		return err
	}
	if err := c.waitAPIObject(ctx, "kube-root-ca.crt config map (root CA publisher)", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt", 2*time.Minute); err != nil {
		return err
	}
	if err := c.ensureCoreDNS(ctx); err != nil {
		return err
	}
	if err := c.ensureLocalPath(ctx); err != nil {
		return err
	}
	c.logf("cluster is up in %s; %d node(s) Ready", time.Since(start).Round(time.Second), len(c.nodes()))
	fmt.Printf("export KUBECONFIG=%s\n", c.adminKubeconfig())
	return nil
}

// checkPorts fails early with a clear message when a port the cluster needs is held by a
// process that is not ours (a component already running under our PID file is fine).
func (c *cluster) checkPorts() error {
	for _, p := range []struct {
		owner string
		addr  string
	}{
		{"etcd", fmt.Sprintf("127.0.0.1:%d", etcdPort)},
		{"etcd", fmt.Sprintf("127.0.0.1:%d", etcdPeerPort)},
		{"kube-apiserver", fmt.Sprintf("%s:%d", c.nodeIP, apiPort)},
		{"kube-controller-manager", fmt.Sprintf("127.0.0.1:%d", kcmPort)},
		{"kube-scheduler", fmt.Sprintf("127.0.0.1:%d", schedPort)},
		{"kubelet", fmt.Sprintf("0.0.0.0:%d", kubeletPort)},
		{"kubelet", fmt.Sprintf("127.0.0.1:%d", kubeletHealth)},
		{"kube-proxy", fmt.Sprintf("127.0.0.1:%d", proxyHealth)},
		{"kube-proxy", fmt.Sprintf("127.0.0.1:%d", proxyMetrics)},
		{netpolAgent, fmt.Sprintf("127.0.0.1:%d", netpolMetrics)},
	} {
		if _, ok := c.running(p.owner); ok {
			continue
		}
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("port %s needed by %s is in use by another process: %w", p.addr, p.owner, err)
		}
		_ = l.Close()
	}
	return nil
}

func (c *cluster) adminTLS() *tls.Config {
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(filepath.Join(c.pkiDir(), "ca.crt")); err == nil {
		pool.AppendCertsFromPEM(b)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert, err := tls.LoadX509KeyPair(filepath.Join(c.pkiDir(), "admin.crt"), filepath.Join(c.pkiDir(), "admin.key")); err == nil {
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func (c *cluster) get(ctx context.Context, url string, tlsCfg *tls.Config) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, body, err
}

// waitHTTP polls url until it answers 200, the component dies, or d passes.
func (c *cluster) waitHTTP(ctx context.Context, name, url string, tlsCfg *tls.Config, d time.Duration) error {
	c.logf("%s: waiting for %s", name, url)
	var last string
	ok := pollUntil(ctx, d, 500*time.Millisecond, func() bool {
		if _, alive := c.running(name); !alive {
			last = "process exited"
			return true
		}
		code, body, err := c.get(ctx, url, tlsCfg)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("HTTP %d: %.200s", code, body)
		return code == http.StatusOK
	})
	if _, alive := c.running(name); !alive {
		return fmt.Errorf("%s exited; last lines of %s:\n%s", name, c.logFile(name), tail(c.logFile(name), 30))
	}
	if !ok {
		return fmt.Errorf("%s not healthy after %s (%s); last lines of %s:\n%s", name, d, last, c.logFile(name), tail(c.logFile(name), 30))
	}
	c.logf("%s: healthy", name)
	return nil
}

func (c *cluster) waitAPIObject(ctx context.Context, what, path string, d time.Duration) error {
	c.logf("waiting for %s", what)
	ok := pollUntil(ctx, d, 500*time.Millisecond, func() bool {
		code, _, err := c.get(ctx, c.apiURL()+path, c.adminTLS())
		return err == nil && code == http.StatusOK
	})
	if !ok {
		return fmt.Errorf("%s did not appear within %s; kube-controller-manager log tail:\n%s", what, d, tail(c.logFile("kube-controller-manager"), 30))
	}
	return nil
}

// startKubelet starts node n's kubelet and waits until the node is Ready.
func (c *cluster) startKubelet(ctx context.Context, n node, bin string) error {
	if err := c.startOn(n, "kubelet", bin,
		"--config="+filepath.Join(n.dir, "kubelet-config.yaml"),
		"--kubeconfig="+c.kubeletKubeconfig(n),
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--hostname-override="+n.name,
		"--node-ip="+n.ip,
		"--v=1",
	); err != nil {
		return err
	}
	return c.waitNodeReady(ctx, n, 3*time.Minute)
}

// stopNode stops node n's kubelet, as a node whose kubelet died or lost the API server:
// the node stops posting its status, the node lifecycle controller marks it NotReady
// (Unknown) after its grace period and its pods not ready, and their Services drop them.
// Its containers keep running under containerd, as they would on a real node cut from the
// control plane; startNode brings the kubelet back on the same state.
func (c *cluster) stopNode(ctx context.Context, n node) error {
	if _, alive := c.running(n.comp("kubelet")); !alive {
		return fmt.Errorf("the kubelet of node %s is not running", n.name)
	}
	if err := c.stop(ctx, n.comp("kubelet"), 10*time.Second); err != nil {
		return err
	}
	c.logf("kubelet: stopped; node %s turns NotReady when the node lifecycle controller's grace period ends", n.name)
	return nil
}

// startNode starts the kubelet stopNode stopped and waits until the node is Ready again.
func (c *cluster) startNode(ctx context.Context, n node) error {
	if _, alive := c.running(n.comp("kubelet")); alive {
		return fmt.Errorf("the kubelet of node %s is running", n.name)
	}
	bin, err := c.bin("kubelet")
	if err != nil {
		return err
	}
	return c.startKubelet(ctx, n, bin)
}

func (c *cluster) waitNodeReady(ctx context.Context, n node, d time.Duration) error {
	kubelet := n.comp("kubelet")
	c.logf("kubelet: waiting for node %s to register Ready", n.name)
	var last string
	ok := pollUntil(ctx, d, time.Second, func() bool {
		if _, alive := c.running(kubelet); !alive {
			last = "kubelet exited"
			return true
		}
		code, body, err := c.get(ctx, c.apiURL()+"/api/v1/nodes/"+n.name, c.adminTLS())
		if err != nil || code != http.StatusOK {
			last = fmt.Sprintf("node not registered yet (%v, HTTP %d)", err, code)
			return false
		}
		var obj struct {
			Status struct {
				Conditions []struct{ Type, Status, Reason, Message string }
			}
		}
		if err := json.Unmarshal(body, &obj); err != nil {
			last = err.Error()
			return false
		}
		for _, cond := range obj.Status.Conditions {
			if cond.Type == "Ready" {
				last = fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
				return cond.Status == "True"
			}
		}
		return false
	})
	if _, alive := c.running(kubelet); !ok || !alive {
		return fmt.Errorf("node %s not Ready within %s (%s); kubelet log tail:\n%s", n.name, d, last, tail(c.logFile(kubelet), 40))
	}
	c.logf("kubelet: node %s Ready", n.name)
	return nil
}

func (c *cluster) waitContainerd(ctx context.Context, n node) error {
	name := n.comp("containerd")
	c.logf("containerd: waiting for %s", n.containerdSock())
	ok := pollUntil(ctx, time.Minute, 300*time.Millisecond, func() bool {
		if _, alive := c.running(name); !alive {
			return true
		}
		return exec.CommandContext(ctx, "ctr", "-a", n.containerdSock(), "version").Run() == nil
	})
	if _, alive := c.running(name); !ok || !alive {
		return fmt.Errorf("containerd of node %s not serving; log tail:\n%s", n.name, tail(c.logFile(name), 30))
	}
	c.logf("containerd: serving")
	return nil
}

// importImage loads an image tarball into the CRI namespace so pods can use it with
// imagePullPolicy IfNotPresent (there is no registry to pull from).
func (c *cluster) importImage(ctx context.Context, n node, tarball string) error {
	out, err := exec.CommandContext(ctx, "ctr", "-a", n.containerdSock(), "-n", "k8s.io", "images", "import", tarball).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into node %s: %w: %s", tarball, n.name, err, out)
	}
	c.logf("containerd: imported %s into node %s", tarball, n.name)
	return nil
}

// guardServiceRange refuses any packet still addressed to the service range after the nat
// table ran: kube-proxy rewrites a ClusterIP that has a ready endpoint, so what is left is a
// Service without one, or one kube-proxy has not programmed yet (it rewrites the filter and
// nat tables one after the other). Without this such a packet follows the default route,
// and on machines whose gateway answers every HTTP request (a sandbox proxy answers 404 with
// no body) a client would read that answer as the adapter's. Refused, the client sees a
// connection error, which it reports as the outage it is. down removes the rules with every
// other rule that names the service range.
func guardServiceRange(ctx context.Context, n node) error {
	for _, chain := range []string{"OUTPUT", "FORWARD"} {
		rule := []string{chain, "-d", serviceCIDR, "-m", "comment", "--comment", "mao: service IP without a kube-proxy rule", "-j", "REJECT"}
		if n.command(ctx, "iptables", append([]string{"-w", "5", "-t", "filter", "-C"}, rule...)...).Run() == nil {
			continue // already there: up is idempotent
		}
		if err := n.run(ctx, "iptables", append([]string{"-w", "5", "-t", "filter", "-A"}, rule...)...); err != nil {
			return err
		}
	}
	return nil
}

// rememberIPForward records the host's net.ipv4.ip_forward before the bridge plugin turns
// it on, so down can put it back.
func (c *cluster) rememberIPForward() error {
	f := filepath.Join(c.dir, "run", "ip_forward.orig")
	if _, err := os.Stat(f); err == nil {
		return nil
	}
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	return os.WriteFile(f, b, 0o644)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// status prints one line per component and fails unless all run.
func (c *cluster) status() error {
	down := 0
	names := c.componentNames()
	for _, name := range names {
		if pid, ok := c.running(name); ok {
			fmt.Printf("%-24s running (pid %d)\n", name, pid)
		} else {
			fmt.Printf("%-24s stopped\n", name)
			down++
		}
	}
	if down > 0 {
		return fmt.Errorf("%w: %d of %d components stopped", errNotRunning, down, len(names))
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.adminKubeconfig())
	return nil
}

func (c *cluster) anyRunning() bool {
	for _, name := range c.componentNames() {
		if _, ok := c.running(name); ok {
			return true
		}
	}
	return false
}

// controlPlane are the components of the control plane, in start order.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// nodeComponents are the components of each node, in start order.
var nodeComponents = []string{"containerd", "kubelet", "kube-proxy", netpolAgent}

// componentNames lists every component of the cluster, in start order: the control plane,
// then each node's.
func (c *cluster) componentNames() []string {
	names := slices.Clone(controlPlane)
	for _, n := range c.nodes() {
		for _, comp := range nodeComponents {
			names = append(names, n.comp(comp))
		}
	}
	return names
}
