package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// down stops the cluster and removes what it put on the host. It is safe to run at any
// time, on a half-started cluster or twice in a row: every step tolerates absence. Kept
// for the next up: the PKI (so exported kubeconfigs stay valid), containerd's content
// store (imported images) and the logs. The local-path volumes go: the PersistentVolumes
// that named them died with etcd's data, so nothing could ever use or reclaim them.
func (c *cluster) down(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("cluster down needs root")
	}
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		c.logf("no state directory %s: nothing to stop", c.dir)
		return nil
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			c.logf("warning: %v", err)
			errs = append(errs, err)
		}
	}
	// Each node's agent, kube-proxy and kubelet go first so nothing recreates what we remove
	// next. The agent's rules stay until the sweep: pods still running meanwhile fail closed.
	// Every node that may exist is stopped, whatever count the last up recorded.
	for i := maxNodes; i >= 1; i-- {
		for _, err := range c.downNode(ctx, c.node(i)) {
			keep(err)
		}
	}
	for _, name := range []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		keep(c.stop(ctx, name, 20*time.Second))
	}
	for i := maxNodes; i >= 1; i-- {
		keep(c.stop(ctx, c.node(i).comp("containerd"), 20*time.Second))
	}
	// Shims and container processes outlive containerd by design; ours are found by the
	// socket path on the shim's command line and by the kubepods cgroup.
	for _, p := range c.strayProcesses() {
		c.logf("killing leftover process %d: %.120s", p.pid, p.cmdline)
		keep(killWait(ctx, p.pid, 5*time.Second))
	}
	keep(c.removeNodeNamespaces(ctx))
	keep(c.unmountAll())
	if bin, err := c.bin("kube-proxy"); err == nil {
		// Removes the chains kube-proxy made in every mode it knows (iptables, ipvs, nftables).
		out, err := exec.CommandContext(ctx, bin, "--cleanup").CombinedOutput()
		if err != nil {
			c.logf("kube-proxy --cleanup: %v: %s", err, tail2(string(out)))
		}
	}
	keep(c.sweepIPTables(ctx))
	if left, err := c.netpolTableLeft(ctx, true); err != nil || left != "" {
		keep(errors.Join(err, errorIf(left)))
	}
	keep(c.deleteLinks(ctx))
	keep(c.restoreIPForward())
	c.removeCgroups()
	for _, d := range []string{"etcd", "kubelet", "pod-logs", "cni/ipam", "containerd/state", "containerd/runc", "apiserver-certs", "controller-manager-certs", "scheduler-certs", "run", localPathDir} {
		keep(os.RemoveAll(filepath.Join(c.dir, d)))
		for i := 2; i <= maxNodes; i++ {
			keep(os.RemoveAll(filepath.Join(c.node(i).dir, d)))
		}
	}
	left, err := c.leftovers()
	keep(err)
	if len(left) > 0 {
		keep(fmt.Errorf("still present after cleanup:\n  %s", strings.Join(left, "\n  ")))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.logf("cluster stopped: nothing of it remains on the host (certificates, images and logs kept in %s)", c.dir)
	return nil
}

func tail2(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// strayProcesses are processes of the cluster that no PID file tracks: containerd shims,
// container processes, and components whose PID file was lost. A component is recognised by
// the state directory on its command line (every one gets a flag pointing into it), never by
// the binary directory alone: that directory is the shared envtest cache, and envtest's etcd
// and kube-apiserver of other test runs on the machine start from it too.
func (c *cluster) strayProcesses() []procInfo {
	procs := processesMatching(c.dir + "/")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil || !strings.Contains(string(b), "/kubepods") {
			continue
		}
		if slices.ContainsFunc(procs, func(p procInfo) bool { return p.pid == pid }) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		procs = append(procs, procInfo{pid: pid, cmdline: strings.ReplaceAll(string(cmd), "\x00", " ")})
	}
	return procs
}

// ourMounts returns mount points under the state directory, deepest first.
func (c *cluster) ourMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == c.dir || strings.HasPrefix(mp, c.dir+"/") {
			out = append(out, mp)
		}
	}
	// Longer paths first so nested mounts go before their parents; reverse order of
	// appearance as the tie-breaker for stacked mounts on one path.
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (c *cluster) unmountAll() error {
	// A pass can reveal mounts shadowed by the ones it removed; repeat until none remain.
	for range 5 {
		mps, err := c.ourMounts()
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				c.logf("unmount %s: %v", mp, err)
			}
		}
	}
	mps, err := c.ourMounts()
	if err == nil && len(mps) > 0 {
		err = fmt.Errorf("mounts remain: %s", strings.Join(mps, ", "))
	}
	return err
}

// ourChain reports whether an iptables chain was made by the kubelet, kube-proxy, the CNI
// plugins or this tool (MAO-, the NetworkPolicy agent's queue). Nothing else on these
// machines uses these prefixes.
func ourChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-") || strings.HasPrefix(name, "MAO-")
}

// errorIf is an error saying msg, or nil for no message.
func errorIf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// ourQueue is the NFQUEUE target of the agent's rules, as iptables-save prints it: a rule
// feeding that queue is ours wherever it sits.
var ourQueue = "NFQUEUE --queue-num " + strconv.Itoa(netpolQueue)

// ruleIsOurs reports whether a rule in a built-in chain belongs to the cluster: it jumps to
// one of our chains or names our bridge or address ranges.
func ruleIsOurs(args []string) bool {
	for i, a := range args {
		if (a == "-j" || a == "-g" || a == "--jump" || a == "--goto") && i+1 < len(args) && ourChain(args[i+1]) {
			return true
		}
		if a == bridgeName || a == podCIDR || a == serviceCIDR {
			return true
		}
	}
	return false
}

// sweepIPTables removes every rule and chain of the cluster from the filter, nat, mangle
// and raw tables, for IPv4 and IPv6, leaving everything else untouched.
func (c *cluster) sweepIPTables(ctx context.Context) error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(tool); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.CommandContext(ctx, tool+"-save", "-t", table).Output()
			if err != nil {
				continue // table not available in this kernel
			}
			var chains []string
			for _, line := range strings.Split(string(out), "\n") {
				switch {
				case strings.HasPrefix(line, ":"):
					name := strings.Fields(line[1:])[0]
					if ourChain(name) {
						chains = append(chains, name)
					}
				case strings.HasPrefix(line, "-A "):
					args, err := splitRule(line[3:])
					if err != nil || len(args) < 2 || ourChain(args[0]) || !ruleIsOurs(args[1:]) {
						continue
					}
					del := append([]string{"-w", "5", "-t", table, "-D"}, args...)
					if out, err := exec.CommandContext(ctx, tool, del...).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(del, " "), err, out))
					}
				}
			}
			for _, ch := range chains {
				_ = exec.CommandContext(ctx, tool, "-w", "5", "-t", table, "-F", ch).Run()
			}
			for _, ch := range chains {
				if out, err := exec.CommandContext(ctx, tool, "-w", "5", "-t", table, "-X", ch).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s -X %s: %w: %s", tool, table, ch, err, out))
				}
			}
		}
	}
	if _, err := exec.LookPath("nft"); err == nil {
		out, _ := exec.CommandContext(ctx, "nft", "list", "tables").Output()
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line) // "table <family> <name>"
			if len(f) == 3 && f[0] == "table" && strings.HasPrefix(f[2], "kube-") {
				if out, err := exec.CommandContext(ctx, "nft", "delete", "table", f[1], f[2]).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("nft delete table %s %s: %w: %s", f[1], f[2], err, out))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// splitRule splits an iptables-save rule into arguments, honouring the double quotes that
// iptables-save puts around comments.
func splitRule(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote, has := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && inQuote && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			inQuote = !inQuote
			has = true
		case (ch == ' ' || ch == '\t') && !inQuote:
			if has || cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if inQuote {
		return nil, errors.New("unbalanced quote in rule")
	}
	if has || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, nil
}

// deleteLinks removes our bridge; deleting it also detaches any veth still enslaved to it,
// and those are deleted too (their pod side vanished with the network namespace).
func (c *cluster) deleteLinks(ctx context.Context) error {
	var errs []error
	out, _ := exec.CommandContext(ctx, "ip", "-o", "link", "show", "master", bridgeName).Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if o, err := exec.CommandContext(ctx, "ip", "link", "del", name).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", name, err, o))
			}
		}
	}
	if exec.CommandContext(ctx, "ip", "link", "show", bridgeName).Run() == nil {
		c.logf("deleting bridge %s", bridgeName)
		if o, err := exec.CommandContext(ctx, "ip", "link", "del", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", bridgeName, err, o))
		}
	}
	return errors.Join(errs...)
}

func (c *cluster) restoreIPForward() error {
	f := filepath.Join(c.dir, "run", "ip_forward.orig")
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/net/ipv4/ip_forward", b, 0o644)
}

// removeCgroups removes the kubelets' kubepods hierarchies and the further nodes' cgroup
// roots from every cgroup v1 controller (and the unified hierarchy), deepest first. Best
// effort: a busy cgroup stays and the leftover check reports the process in it.
func (c *cluster) removeCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if st, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil && st.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	for i := 2; i <= maxNodes; i++ {
		more, _ := filepath.Glob("/sys/fs/cgroup/*/" + c.node(i).name)
		roots = append(roots, more...)
	}
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			_ = syscall.Rmdir(d)
		}
	}
}

// leftovers lists anything of the cluster still on the host: processes, mounts, iptables
// rules or chains, nftables tables, the bridge and its veths.
func (c *cluster) leftovers() ([]string, error) {
	var out []string
	for _, p := range c.strayProcesses() {
		out = append(out, fmt.Sprintf("process %d: %.160s", p.pid, p.cmdline))
	}
	mps, err := c.ourMounts()
	if err != nil {
		return nil, err
	}
	for _, m := range mps {
		out = append(out, "mount "+m)
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			continue
		}
		b, err := exec.Command(tool).Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") || strings.Contains(line, "MAO-") || strings.Contains(line, ourQueue) ||
				strings.Contains(line, bridgeName) || strings.Contains(line, podCIDR) || strings.Contains(line, serviceCIDR) {
				out = append(out, tool+": "+line)
			}
		}
	}
	if _, err := exec.LookPath("nft"); err == nil {
		b, _ := exec.Command("nft", "list", "tables").Output()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "kube-") {
				out = append(out, "nftables: "+line)
			}
		}
	}
	if left, err := c.netpolTableLeft(context.Background(), false); err != nil {
		return nil, err
	} else if left != "" {
		out = append(out, "nftables: "+left)
	}
	if exec.Command("ip", "link", "show", bridgeName).Run() == nil {
		out = append(out, "bridge "+bridgeName)
	}
	for _, net := range clusterNets {
		if unreachableRoute(context.Background(), net) {
			out = append(out, "route unreachable "+net)
		}
	}
	for i := 2; i <= maxNodes; i++ {
		n := c.node(i)
		if exec.Command("ip", "link", "show", n.hostLink()).Run() == nil {
			out = append(out, "link "+n.hostLink()+" (node "+n.name+")")
		}
		if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.name); len(dirs) > 0 {
			out = append(out, "cgroup "+strings.Join(dirs, ", "))
		}
	}
	return out, nil
}
