package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A cluster of more than one node runs its first node as it always has, in the host's
// network namespace beside the control plane, and every further node in a network namespace
// of its own, as kind runs each node in a container but without a container engine:
//
//   - the namespace is bound to a file under run/netns (unshare --net=FILE), so nothing of
//     it lands in the host's /run/netns, and the node's processes enter it with nsenter;
//   - a veth pair joins it to the host: mao-nI on the host (10.243.I.1), eth0 in the node
//     (10.243.I.2, the node's InternalIP), the host routing each node's pod CIDR to it;
//   - the node has its own containerd (root, state, socket), CNI bridge and IP allocation,
//     kubelet (root directory, certificates, cgroup root /mao-node-I, so no kubelet reaps
//     another's pods), kube-proxy and NetworkPolicy agent, each programming the iptables of
//     the node's namespace only.
//
// Deleting the namespace removes its links, routes and rules at once, so down only has to
// stop the processes, unmount, and remove the node's cgroup root.

// clusterNets are the pod and node-link networks as a whole. With more than one node the
// host holds an unreachable route for each, below the routes of the nodes' /24s, so that a
// packet for a cut node's address is refused at once instead of following the default route
// out of the machine (where a sandbox's gateway may even answer it).
var clusterNets = []string{"10.244.0.0/16", nodeNetPrefix + "0.0/16"}

// maxNodes bounds NODES: certificates are issued up front for every node that may exist,
// and two cores do not run more.
const maxNodes = 3

// nodeNetPrefix is the host-to-node link network: 10.243.I.0/24 for node I.
const nodeNetPrefix = "10.243."

// node is one kubelet of the cluster with its runtime, kube-proxy and policy agent.
type node struct {
	index   int    // 1-based; node 1 is the host's
	name    string // the Node object's name
	ip      string // InternalIP
	podCIDR string
	dir     string // the node's state: configs, containerd, kubelet, CNI, pod logs
	netns   string // file the node's network namespace is bound to; "" for the host's
}

// nodes lists the cluster's nodes, the host's first.
func (c *cluster) nodes() []node {
	n := max(c.nodeCount, 1)
	out := make([]node, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, c.node(i))
	}
	return out
}

// node returns node i (1-based).
func (c *cluster) node(i int) node {
	if i == 1 {
		return node{index: 1, name: nodeName, ip: c.nodeIP, podCIDR: podCIDR, dir: c.dir}
	}
	name := fmt.Sprintf("%s-%d", nodeName, i)
	return node{
		index:   i,
		name:    name,
		ip:      fmt.Sprintf("%s%d.2", nodeNetPrefix, i),
		podCIDR: fmt.Sprintf("10.244.%d.0/24", i-1),
		dir:     filepath.Join(c.dir, "nodes", name),
		netns:   filepath.Join(c.dir, "run", "netns", name),
	}
}

// nodeByName finds a node of the cluster by its Node name; "" is the first node.
func (c *cluster) nodeByName(name string) (node, error) {
	if name == "" {
		return c.node(1), nil
	}
	for i := 1; i <= maxNodes; i++ {
		if n := c.node(i); n.name == name {
			if i > max(c.nodeCount, 1) {
				return node{}, fmt.Errorf("node %s is not part of this cluster (%d node(s); make cluster-up NODES=%d adds it)", name, max(c.nodeCount, 1), i)
			}
			return n, nil
		}
	}
	return node{}, fmt.Errorf("no node %q: the nodes are %s, %s-2 ... %s-%d", name, nodeName, nodeName, nodeName, maxNodes)
}

// comp is the name of one of the node's components, for its PID file and log: the first
// node's keep the names a single-node cluster always used.
func (n node) comp(name string) string {
	if n.index == 1 {
		return name
	}
	return name + "@" + n.name
}

// hostLink is the host side of the node's veth pair; hostIP its address.
func (n node) hostLink() string { return fmt.Sprintf("mao-n%d", n.index) }

func (n node) hostIP() string { return fmt.Sprintf("%s%d.1", nodeNetPrefix, n.index) }

// cgroupRoot is the node's kubelet's cgroup root: "/" on the host's node, so a single-node
// cluster is what it always was.
func (n node) cgroupRoot() string {
	if n.index == 1 {
		return "/"
	}
	return "/" + n.name
}

func (n node) containerdSock() string {
	return filepath.Join(n.dir, "containerd", "containerd.sock")
}

// command runs a program in the node's network namespace.
func (n node) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if n.netns == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.netns, "--", name}, args...)...)
}

// run runs a program in the node's network namespace and names it in the error.
func (n node) run(ctx context.Context, name string, args ...string) error {
	if out, err := n.command(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s (node %s): %w: %s", name, strings.Join(args, " "), n.name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startOn starts a component of node n; in a node of its own namespace through nsenter,
// which execs the component, so the PID file names the component itself.
func (c *cluster) startOn(n node, name, bin string, args ...string) error {
	if n.netns == "" {
		return c.start(n.comp(name), bin, args...)
	}
	return c.start(n.comp(name), "nsenter", append([]string{"--net=" + n.netns, "--", bin}, args...)...)
}

// nodeCountFile records how many nodes up started, for the commands that follow it.
func (c *cluster) nodeCountFile() string { return filepath.Join(c.dir, "node-count") }

// loadNodeCount reads the node count of the cluster up last started (1 without a record).
func (c *cluster) loadNodeCount() {
	c.nodeCount = 1
	if b, err := os.ReadFile(c.nodeCountFile()); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v >= 1 && v <= maxNodes {
			c.nodeCount = v
		}
	}
}

// ensureNodeNetwork creates node n's network namespace, its link to the host, and the routes
// both ways; idempotent.
func (c *cluster) ensureNodeNetwork(ctx context.Context, n node) error {
	if err := os.MkdirAll(filepath.Dir(n.netns), 0o755); err != nil {
		return err
	}
	if !isNetnsMount(n.netns) {
		if err := os.WriteFile(n.netns, nil, 0o644); err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, "unshare", "--net="+n.netns, "true").CombinedOutput(); err != nil {
			return fmt.Errorf("creating the network namespace of node %s: %w: %s", n.name, err, out)
		}
	}
	host := node{index: 1, name: "host"}
	if exec.CommandContext(ctx, "ip", "link", "show", n.hostLink()).Run() != nil {
		peer := n.hostLink() + "p"
		for _, args := range [][]string{
			{"link", "add", n.hostLink(), "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", n.netns},
		} {
			if err := host.run(ctx, "ip", args...); err != nil {
				return err
			}
		}
		if err := n.run(ctx, "ip", "link", "set", peer, "name", "eth0"); err != nil {
			return err
		}
	}
	steps := []struct {
		on   node
		args []string
	}{
		{host, []string{"addr", "replace", n.hostIP() + "/24", "dev", n.hostLink()}},
		{host, []string{"link", "set", n.hostLink(), "up"}},
		{n, []string{"link", "set", "lo", "up"}},
		{n, []string{"addr", "replace", n.ip + "/24", "dev", "eth0"}},
		{n, []string{"link", "set", "eth0", "up"}},
		{n, []string{"route", "replace", "default", "via", n.hostIP()}},
		{host, []string{"route", "replace", n.podCIDR, "via", n.ip}},
		{host, []string{"route", "replace", "unreachable", clusterNets[0]}},
		{host, []string{"route", "replace", "unreachable", clusterNets[1]}},
	}
	for _, s := range steps {
		if err := s.on.run(ctx, "ip", s.args...); err != nil {
			return err
		}
	}
	// Forwarding on both sides: the host carries traffic between nodes, the node between its
	// link and its pod bridge.
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return err
	}
	return n.run(ctx, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
}

// isNetnsMount reports whether path is a bound network namespace (an nsfs mount).
func isNetnsMount(path string) bool {
	var st syscall.Statfs_t
	const nsfsMagic = 0x6e736673
	return syscall.Statfs(path, &st) == nil && st.Type == nsfsMagic
}

// ensureCgroupRoot creates node n's kubelet cgroup root in every cgroup v1 hierarchy (the
// kubelet refuses a root that does not exist), copying the cpuset parent's CPUs and memory
// nodes, which a new cpuset cgroup does not inherit.
func ensureCgroupRoot(n node) error {
	if n.index == 1 {
		return nil
	}
	hier, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	for _, h := range hier {
		if st, err := os.Stat(h); err != nil || !st.IsDir() {
			continue
		}
		d := filepath.Join(h, n.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup root of node %s: %w", n.name, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
					if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
						return fmt.Errorf("cgroup root of node %s: %s: %w", n.name, f, err)
					}
				}
			}
		}
	}
	return nil
}

// upNode starts node n's runtime, kubelet, kube-proxy and policy agent, and waits until the
// node is Ready and its proxy healthy.
func (c *cluster) upNode(ctx context.Context, n node, bins map[string]string, images []string) error {
	if n.netns != "" {
		if err := c.ensureNodeNetwork(ctx, n); err != nil {
			return err
		}
		if err := ensureCgroupRoot(n); err != nil {
			return err
		}
	}
	for _, d := range []string{"kubelet", "pod-logs", "cni/net.d", "cni/ipam", "containerd"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := c.writeNodeConfigs(n); err != nil {
		return err
	}
	if err := c.startOn(n, "containerd", "containerd", "--config="+filepath.Join(n.dir, "containerd", "config.toml")); err != nil {
		return err
	}
	if err := c.waitContainerd(ctx, n); err != nil {
		return err
	}
	for _, img := range images {
		if err := c.importImage(ctx, n, img); err != nil {
			return err
		}
	}
	if err := c.startKubelet(ctx, n, bins["kubelet"]); err != nil {
		return err
	}
	if err := guardServiceRange(ctx, n); err != nil {
		return err
	}
	return c.startNodeNetworking(ctx, n, bins["kube-proxy"])
}

// startNodeNetworking starts node n's kube-proxy and, once it is healthy, its policy agent.
func (c *cluster) startNodeNetworking(ctx context.Context, n node, kubeProxy string) error {
	if err := c.startOn(n, "kube-proxy", kubeProxy, "--config="+filepath.Join(n.dir, "kube-proxy-config.yaml")); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, n.comp("kube-proxy"), fmt.Sprintf("http://%s:%d/healthz", n.proxyAddr(), proxyHealth), nil, 2*time.Minute); err != nil {
		return err
	}
	if len(c.nodes()) > 1 {
		if err := keepPodSources(ctx, n); err != nil {
			return err
		}
	}
	// Before any pod of the cluster's own starts, so every pod is under enforcement from
	// its first packet.
	return c.startNetpolAgent(ctx, n)
}

// podSourcesChain holds keepPodSources' rules.
const podSourcesChain = "MAO-POD-SOURCES"

// kubeProxyMasqMark is the mark kube-proxy's KUBE-MARK-MASQ sets and KUBE-POSTROUTING
// masquerades on (its default --iptables-masquerade-bit 14).
const kubeProxyMasqMark = "0x4000"

// keepPodSources exempts connections from node n's pods to another node's pods from
// kube-proxy's masqueradeAll, which the single node needs (a pod reaching a pod of its own
// bridge through a Service must get the answer back through the host) but which would hide
// the client pod behind the node's address from the other node's NetworkPolicy agent, which
// would then refuse it. kube-proxy marks the connection's first packet in nat PREROUTING and
// masquerades it in nat POSTROUTING; mangle FORWARD runs between the two, after the
// Service's DNAT, and no component of the cluster orders rules there: for a destination on
// another node, the mark is cleared, the source stays the pod's, and the reply is routed back
// to the pod through the host.
func keepPodSources(ctx context.Context, n node) error {
	return installMangleChain(ctx, n, podSourcesChain, [][]string{
		{"-d", n.podCIDR, "-j", "RETURN"},
		{"-j", "MARK", "--set-xmark", "0x0/" + kubeProxyMasqMark},
	}, []string{"FORWARD", "-s", n.podCIDR, "-d", clusterNets[0], "-m", "comment", "--comment", "mao: pod to another node's pod keeps its source", "-j", podSourcesChain})
}

// proxyAddr is where the node's kube-proxy and policy agent serve health and metrics: the
// loopback on the host's node, the node's own address elsewhere, so the host can reach them.
func (n node) proxyAddr() string {
	if n.index == 1 {
		return "127.0.0.1"
	}
	return n.ip
}

// downNode stops node n's components and removes its pods, in the order down uses for the
// first node. The namespace, mounts and cgroups go in down's sweep.
func (c *cluster) downNode(ctx context.Context, n node) []error {
	var errs []error
	for _, s := range []struct {
		name  string
		grace time.Duration
	}{{netpolAgent, 10 * time.Second}, {"kube-proxy", 10 * time.Second}, {"kubelet", 20 * time.Second}} {
		if err := c.stop(ctx, n.comp(s.name), s.grace); err != nil {
			errs = append(errs, err)
		}
	}
	if _, ok := c.running(n.comp("containerd")); ok {
		if err := c.removeAllPods(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// removeNodeNamespaces unbinds every worker node's network namespace. With its processes
// gone the kernel then deletes it, and with it the node's links, routes and iptables; the
// host end of its veth pair goes with its peer.
func (c *cluster) removeNodeNamespaces(ctx context.Context) error {
	files, _ := filepath.Glob(filepath.Join(c.dir, "run", "netns", "*"))
	var errs []error
	for _, f := range files {
		if err := syscall.Unmount(f, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", f, err))
		}
	}
	for _, net := range clusterNets {
		if unreachableRoute(ctx, net) {
			if out, err := exec.CommandContext(ctx, "ip", "route", "del", "unreachable", net).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ip route del unreachable %s: %w: %s", net, err, out))
			}
		}
	}
	// The kernel deletes an unbound namespace, and the host end of its link with it, a moment
	// after its last user left; a link still there after that wait is deleted here.
	for i := 2; i <= maxNodes; i++ {
		link := c.node(i).hostLink()
		gone := func() bool { return exec.CommandContext(ctx, "ip", "link", "show", link).Run() != nil }
		if pollUntil(ctx, 5*time.Second, 100*time.Millisecond, gone) {
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "link", "del", link).CombinedOutput(); err != nil && !gone() {
			errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", link, err, out))
		}
	}
	return errors.Join(errs...)
}

// unreachableRoute reports whether the host holds the unreachable route for net.
func unreachableRoute(ctx context.Context, net string) bool {
	out, err := exec.CommandContext(ctx, "ip", "route", "show", "type", "unreachable", net).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// cutNode takes node n off the network: the host end of its link goes down, so the control
// plane, the other nodes and their pods can no longer reach it or its pods, nor it them,
// while everything on it keeps running, as on a node whose switch port died.
func (c *cluster) cutNode(ctx context.Context, n node) error {
	if n.netns == "" {
		return fmt.Errorf("node %s shares the host's network and the control plane's; cut one of %s-2 ... %s-%d", n.name, nodeName, nodeName, c.nodeCount)
	}
	if err := (node{name: "host"}).run(ctx, "ip", "link", "set", n.hostLink(), "down"); err != nil {
		return err
	}
	c.logf("node %s: network cut (%s down); it turns NotReady when the node lifecycle controller's grace period ends", n.name, n.hostLink())
	return nil
}

// reconnectNode undoes cutNode and waits until the node is Ready again.
func (c *cluster) reconnectNode(ctx context.Context, n node) error {
	if n.netns == "" {
		return fmt.Errorf("node %s is never cut", n.name)
	}
	host := node{name: "host"}
	if err := host.run(ctx, "ip", "link", "set", n.hostLink(), "up"); err != nil {
		return err
	}
	// The route left with the link going down.
	if err := host.run(ctx, "ip", "route", "replace", n.podCIDR, "via", n.ip); err != nil {
		return err
	}
	c.logf("node %s: network restored", n.name)
	if err := c.waitNodeReady(ctx, n, 3*time.Minute); err != nil {
		return err
	}
	// kube-proxy's and the agent's informers failed every list and watch while the node was
	// cut, and client-go backs them off for up to a minute; until they list again the node
	// routes Services to gone endpoints and judges packets by gone pods (an address reused
	// by a new pod). Restarted, both list at once, as after a node's reboot.
	bin, err := c.bin("kube-proxy")
	if err != nil {
		return err
	}
	for _, comp := range []string{netpolAgent, "kube-proxy"} {
		if err := c.stop(ctx, n.comp(comp), 10*time.Second); err != nil {
			return err
		}
	}
	return c.startNodeNetworking(ctx, n, bin)
}

// nodeAt is node n again, now that the first node's IP is known.
func (c *cluster) nodeAt(n node) node { return c.node(n.index) }
