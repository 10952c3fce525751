package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fixed cluster addressing. The ranges are private and unlikely to collide with a host
// network; the bridge name is ours alone so cleanup never touches someone else's bridge.
const (
	nodeName      = "mao-node"
	bridgeName    = "mao0"
	podCIDR       = "10.244.0.0/24"
	serviceCIDR   = "10.96.0.0/24"
	apiServiceIP  = "10.96.0.1"
	clusterDomain = "cluster.local"
	apiPort       = 6443
	etcdPort      = 12379
	etcdPeerPort  = 12380
	kcmPort       = 10257
	schedPort     = 10259
	kubeletPort   = 10250
	kubeletHealth = 10248
	proxyHealth   = 10256
	proxyMetrics  = 10249
)

// clusterImages names the images the cluster itself runs. Their versions live in hack/versions.env;
// hack/cluster-up.sh builds the images and passes the names as flags, so no version is
// repeated here.
type clusterImages struct {
	pause           string // containerd's sandbox image; built from ./hack/images/pause
	coredns         string // cluster DNS
	localPath       string // local-path-provisioner, the default StorageClass
	localPathHelper string // the provisioner's helper pods: a shell for its setup/teardown scripts
}

// check fails up early, naming the missing flag, instead of creating pods that can never
// start.
func (im clusterImages) check() error {
	for flagName, v := range map[string]string{
		"-pause-image": im.pause, "-coredns-image": im.coredns,
		"-local-path-image": im.localPath, "-local-path-helper-image": im.localPathHelper,
	} {
		if v == "" {
			return fmt.Errorf("%s is required for up (hack/cluster-up.sh passes it from hack/versions.env)", flagName)
		}
	}
	return nil
}

// cluster is one cluster rooted at a state directory.
type cluster struct {
	dir       string // state directory, outside the checkout
	binDir    string // kube-* and etcd binaries (hack/k8s-binaries.sh output)
	nodeIP    string // the first node's, where the control plane serves too
	nodeCount int    // nodes, the host's included (see nodes.go)
	quiet     bool
	images    clusterImages
}

func (c *cluster) logf(format string, args ...any) {
	if !c.quiet {
		fmt.Fprintf(os.Stderr, "[cluster] "+format+"\n", args...)
	}
}

func (c *cluster) apiURL() string { return fmt.Sprintf("https://%s:%d", c.nodeIP, apiPort) }

func (c *cluster) adminKubeconfig() string { return filepath.Join(c.dir, "admin.kubeconfig") }

const usage = `usage: cluster [flags] <command>

commands:
  up                   start (or reuse) the cluster of -nodes nodes and wait until all are Ready
  down                 stop everything the cluster started and remove its host state
  status               print each component's state; exit 0 only if all run
  verify-clean         exit non-zero if any process, mount, iptables rule, bridge or netns remains
  kubeconfig           print the admin kubeconfig path
  sockets              print the nodes' containerd sockets, comma-separated (images -load)
  stop-node [NODE]     stop a node's kubelet (its containers keep running, as on a node cut from
                       the control plane); the node turns NotReady after the controller's grace
  start-node [NODE]    start the kubelet again and wait until the node is Ready
  cut-node NODE        cut a node of its own network namespace (mao-node-2, ...) off the network:
                       nothing reaches it or its pods, nor they anything, while all keeps running
  reconnect-node NODE  restore a cut node's network and wait until the node is Ready
NODE defaults to the first node, mao-node.

flags:
`

func main() {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	dir := fs.String("dir", envOr("MAO_CLUSTER_DIR", "/var/tmp/mao-cluster"), "state directory (env MAO_CLUSTER_DIR)")
	binDir := fs.String("bin-dir", os.Getenv("MAO_K8S_BIN_DIR"), "directory with kube-* and etcd binaries (env MAO_K8S_BIN_DIR)")
	images := fs.String("import", "", "colon-separated image tarballs to import into containerd before the kubelet starts")
	timeout := fs.Duration("timeout", 10*time.Minute, "overall deadline for up/down")
	nodes := fs.Int("nodes", envInt("MAO_NODES", 1), fmt.Sprintf("nodes of the cluster up starts, 1 to %d (env MAO_NODES)", maxNodes))
	var im clusterImages
	fs.StringVar(&im.pause, "pause-image", "", "pod sandbox image (up)")
	fs.StringVar(&im.coredns, "coredns-image", "", "CoreDNS image (up)")
	fs.StringVar(&im.localPath, "local-path-image", "", "local-path-provisioner image (up)")
	fs.StringVar(&im.localPathHelper, "local-path-helper-image", "", "image with /bin/sh for the provisioner's helper pods (up)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	cmd, nodeArg := fs.Arg(0), fs.Arg(1)
	nodeCmd := cmd == "stop-node" || cmd == "start-node" || cmd == "cut-node" || cmd == "reconnect-node"
	if fs.NArg() < 1 || fs.NArg() > 2 || (fs.NArg() == 2 && !nodeCmd) {
		fs.Usage()
		os.Exit(2)
	}
	if *nodes < 1 || *nodes > maxNodes {
		fmt.Fprintf(os.Stderr, "[cluster] -nodes (MAO_NODES) must be 1 to %d, not %d\n", maxNodes, *nodes)
		os.Exit(2)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil || abs == "/" {
		fmt.Fprintln(os.Stderr, "[cluster] invalid state directory:", *dir)
		os.Exit(2)
	}
	c := &cluster{dir: abs, binDir: *binDir, images: im}
	c.loadNodeCount()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	defer cancelT()

	if cmd == "up" || cmd == "down" || nodeCmd {
		unlock, err := lockDir(abs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "[cluster] error:", err)
			os.Exit(1)
		}
		defer unlock()
	}
	var n node
	if nodeCmd {
		if n, err = c.nodeByName(nodeArg); err != nil {
			fmt.Fprintln(os.Stderr, "[cluster] error:", err)
			os.Exit(2)
		}
	}
	switch cmd {
	case "up":
		if err := im.check(); err != nil {
			fmt.Fprintln(os.Stderr, "[cluster] error:", err)
			os.Exit(2)
		}
		if c.anyRunning() && c.nodeCount != *nodes {
			fmt.Fprintf(os.Stderr, "[cluster] error: the cluster runs with %d node(s), not %d: make cluster-down first\n", c.nodeCount, *nodes)
			os.Exit(1)
		}
		c.nodeCount = *nodes
		err = c.withNodeIP(func() error { return c.up(ctx, splitList(*images)) })
	case "down":
		err = c.down(ctx)
	case "stop-node":
		err = c.withNodeIP(func() error { return c.stopNode(ctx, c.nodeAt(n)) })
	case "start-node":
		err = c.withNodeIP(func() error { return c.startNode(ctx, c.nodeAt(n)) })
	case "cut-node":
		err = c.cutNode(ctx, n)
	case "reconnect-node":
		err = c.withNodeIP(func() error { return c.reconnectNode(ctx, c.nodeAt(n)) })
	case "status":
		err = c.status()
	case "verify-clean":
		var leftovers []string
		leftovers, err = c.leftovers()
		if err == nil && len(leftovers) > 0 {
			for _, l := range leftovers {
				fmt.Println(l)
			}
			err = fmt.Errorf("%d leftovers of the cluster remain", len(leftovers))
		}
	case "kubeconfig":
		fmt.Println(c.adminKubeconfig())
	case "sockets":
		var socks []string
		for _, n := range c.nodes() {
			socks = append(socks, n.containerdSock())
		}
		fmt.Println(strings.Join(socks, ","))
	default:
		fs.Usage()
		os.Exit(2)
	}
	if errors.Is(err, errNotRunning) {
		// Not an error for callers that ask "is it up?" (the e2e suite does).
		fmt.Fprintln(os.Stderr, "[cluster]", err)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "[cluster] error:", err)
		os.Exit(1)
	}
}

// errNotRunning is status's answer when some component is stopped.
var errNotRunning = errors.New("the cluster is not (fully) running")

func (c *cluster) withNodeIP(f func() error) error {
	ip, err := hostIP()
	if err != nil {
		return err
	}
	c.nodeIP = ip
	return f()
}

// hostIP picks the source address of the default route: the kubelet registers it as the
// node's InternalIP and the API server advertises it to pods, so it must be reachable from
// the pod bridge (loopback is not).
func hostIP() (string, error) {
	if v := os.Getenv("MAO_NODE_IP"); v != "" {
		if net.ParseIP(v) == nil {
			return "", fmt.Errorf("MAO_NODE_IP %q is not an IP address", v)
		}
		return v, nil
	}
	conn, err := net.Dial("udp4", "192.0.2.254:9") // no packet is sent for UDP dial
	if err != nil {
		return "", fmt.Errorf("finding the host IP from the default route (set MAO_NODE_IP to override): %w", err)
	}
	defer conn.Close()
	addr, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok || addr.IP.IsLoopback() {
		return "", errors.New("no non-loopback host IP found (set MAO_NODE_IP)")
	}
	return addr.IP.String(), nil
}

// envInt is k's integer value, def when unset; a value that is not a number is -1, which
// the caller's range check refuses with its own message.
func envInt(k string, def int) int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range filepath.SplitList(s) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// lockDir serialises up and down on one state directory: two concurrent ups would start
// every component twice. Go opens files close-on-exec, so the components we start do not
// inherit the lock and hold it forever.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "[cluster] waiting for another cluster up/down on %s\n", dir)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
	}
	return func() { _ = f.Close() }, nil
}
