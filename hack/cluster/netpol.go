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
	"time"
)

// NetworkPolicy enforcement: sigs.k8s.io/kube-network-policies's controller, built by
// hack/cluster-up.sh with the main in netpolagent/ and run on the host beside kube-proxy. It
// reads pods, namespaces and NetworkPolicies from the API server and gives a verdict on each
// packet the kernel queues to it over nfqueue.
//
// Upstream the agent queues packets with an nftables rule of its own (the "queue"
// expression), but this kernel is built without CONFIG_NFT_QUEUE: its transaction is refused
// with ENOENT, so its table never exists. The kernel does have the iptables NFQUEUE target,
// so the tool installs the equivalent rules itself, in netpolChain: the same verdict path,
// only the hook that feeds the queue differs (see docs/local-cluster.md, NetworkPolicy).
const (
	netpolAgent = "kube-network-policies"
	// netpolQueue is the nfqueue the rules feed and the agent reads; upstream's manifest
	// uses 98 too.
	netpolQueue = 98
	// netpolChain is the mangle chain that sends pod connections to the agent. mangle
	// POSTROUTING runs before nat POSTROUTING, so the agent sees the pod's own source
	// address, not kube-proxy's masquerade, as upstream's chain (srcnat - 5) does.
	netpolChain   = "MAO-NETPOL"
	netpolMetrics = 9080
	netpolComment = "mao: NetworkPolicy agent (kube-network-policies)"
)

// netpolAgentBin is where hack/cluster-up.sh installs the agent: in the state directory,
// so down (which gets no flags) can run its -cleanup.
func (c *cluster) netpolAgentBin() string { return filepath.Join(c.dir, "tools", netpolAgent) }

// netpolRBAC is the agent's identity's access: what upstream's ClusterRole grants, and
// events, which its controller records.
func netpolRBAC() []apiObject {
	return toAPIObjects([]struct {
		path string
		obj  any
	}{
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": netpolAgent},
			"rules": []any{
				map[string]any{"apiGroups": []string{""}, "resources": []string{"pods", "namespaces"}, "verbs": []string{"list", "watch"}},
				map[string]any{"apiGroups": []string{"networking.k8s.io"}, "resources": []string{"networkpolicies"}, "verbs": []string{"list", "watch"}},
				map[string]any{"apiGroups": []string{""}, "resources": []string{"events"}, "verbs": []string{"create", "patch"}},
			}}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": netpolAgent},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": netpolAgent},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:" + netpolAgent}}}},
	})
}

// netpolRules are the rules of netpolChain, in order. Established flows and the host's root
// processes (the kubelet's probes, the API server calling webhooks, the e2e suite's
// host-side clients) pass as upstream's "ct state established,related accept" and
// "meta skuid 0 accept" let them; every other new connection from or to a pod is queued.
// Upstream queues only pods some policy selects; queueing every pod costs a userspace
// verdict per new connection, which is nothing at this cluster's scale, and the agent
// accepts what no policy selects. No --queue-bypass: with the agent gone, pod connections
// fail (upstream's default, fail closed) rather than pass unchecked.
//
// On a node of its own namespace the host's processes arrive from the far side of the link,
// as hostSource (kube-proxy masquerades them to the link's address), where the owner match
// cannot see them: that source passes too, so the host's clients reach every node's pods as
// they reach the first node's. hostSource is "" on the first node.
func netpolRules(podCIDR, hostSource string) [][]string {
	q := []string{"-j", "NFQUEUE", "--queue-num", strconv.Itoa(netpolQueue)}
	rules := [][]string{
		{"-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"},
		{"-m", "owner", "--uid-owner", "0", "-j", "RETURN"},
	}
	if hostSource != "" {
		rules = append(rules, []string{"-s", hostSource, "-j", "RETURN"})
	}
	return append(rules,
		append([]string{"-s", podCIDR}, q...),
		append([]string{"-d", podCIDR}, q...),
	)
}

// startNetpolAgent starts node n's agent, waits until it has bound its queue (so no packet
// meets a queue nobody reads), then hooks netpolChain into the node's mangle POSTROUTING.
// Each node's agent judges the connections of its own pods, as upstream's DaemonSet does.
func (c *cluster) startNetpolAgent(ctx context.Context, n node) error {
	name := n.comp(netpolAgent)
	bin := c.netpolAgentBin()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("NetworkPolicy agent missing (hack/cluster-up.sh builds and installs it): %w", err)
	}
	if err := c.ensureObjects(ctx, netpolRBAC()); err != nil {
		return fmt.Errorf("NetworkPolicy agent RBAC: %w", err)
	}
	if err := c.startOn(n, netpolAgent, bin,
		"-kubeconfig="+filepath.Join(c.dir, netpolAgent+".kubeconfig"),
		"-hostname-override="+n.name,
		"-nfqueue-id="+strconv.Itoa(netpolQueue),
		fmt.Sprintf("-metrics-bind-address=%s:%d", n.proxyAddr(), netpolMetrics),
		"-v=1",
	); err != nil {
		return err
	}
	c.logf("%s: waiting for it to bind nfqueue %d", name, netpolQueue)
	ok := pollUntil(ctx, 2*time.Minute, 500*time.Millisecond, func() bool {
		pid, alive := c.running(name)
		if !alive {
			return true
		}
		bound, _ := queueBound(pid, netpolQueue)
		return bound
	})
	if _, alive := c.running(name); !ok || !alive {
		return fmt.Errorf("%s did not bind nfqueue %d within 2m; last lines of %s:\n%s", name, netpolQueue, c.logFile(name), tail(c.logFile(name), 30))
	}
	if err := installNetpolRules(ctx, n); err != nil {
		return err
	}
	c.logf("%s: enforcing (nfqueue %d)", name, netpolQueue)
	return nil
}

// queueBound reports whether a process listens on nfqueue n in the network namespace of
// process pid: the kernel lists each bound queue, first field its number, in
// /proc/PID/net/netfilter/nfnetlink_queue.
func queueBound(pid, n int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/netfilter/nfnetlink_queue", pid))
	if err != nil {
		return false, fmt.Errorf("reading nfqueue state: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(n) {
			return true, nil
		}
	}
	return false, nil
}

// installNetpolRules (re)writes node n's netpolChain and its jump; idempotent, as up is.
func installNetpolRules(ctx context.Context, n node) error {
	hostSource := ""
	if n.netns != "" {
		hostSource = n.hostIP()
	}
	return installMangleChain(ctx, n, netpolChain, netpolRules(n.podCIDR, hostSource),
		[]string{"POSTROUTING", "-m", "comment", "--comment", netpolComment, "-j", netpolChain})
}

// installMangleChain (re)writes a mangle chain of node n with rules, and appends jump (a
// built-in chain and its match) unless it is there; idempotent, as up is.
func installMangleChain(ctx context.Context, n node, chain string, rules [][]string, jump []string) error {
	ipt := func(args ...string) error {
		return n.run(ctx, "iptables", append([]string{"-w", "5", "-t", "mangle"}, args...)...)
	}
	if n.command(ctx, "iptables", "-w", "5", "-t", "mangle", "-n", "-L", chain).Run() != nil {
		if err := ipt("-N", chain); err != nil {
			return err
		}
	}
	if err := ipt("-F", chain); err != nil {
		return err
	}
	for _, r := range rules {
		if err := ipt(append([]string{"-A", chain}, r...)...); err != nil {
			return err
		}
	}
	if n.command(ctx, "iptables", append([]string{"-w", "5", "-t", "mangle", "-C"}, jump...)...).Run() == nil {
		return nil
	}
	return ipt(append([]string{"-A"}, jump...)...)
}

// netpolTableLeft asks the agent's binary whether its nftables table exists (this host has
// no nft binary); cleanup true deletes it first. Without the binary nothing of the agent can
// have run from this state directory, so nothing can be left.
func (c *cluster) netpolTableLeft(ctx context.Context, cleanup bool) (string, error) {
	bin := c.netpolAgentBin()
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if cleanup {
		if out, err := exec.CommandContext(ctx, bin, "-cleanup").CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s -cleanup: %w: %s", netpolAgent, err, out)
		}
	}
	out, err := exec.CommandContext(ctx, bin, "-check-clean").CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return strings.TrimSpace(string(out)), nil
	}
	if err != nil {
		return "", fmt.Errorf("%s -check-clean: %w", netpolAgent, err)
	}
	return "", nil
}
