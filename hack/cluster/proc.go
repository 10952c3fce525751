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

// A PID file holds "<pid> <start time in clock ticks>": the start time guards against
// signalling an unrelated process that reused the PID after a reboot or a crash.

// maxLogBytes is the size at which a component's log is rotated when it next starts.
const maxLogBytes = 32 << 20

func (c *cluster) pidFile(name string) string { return filepath.Join(c.dir, "run", name+".pid") }

func (c *cluster) logFile(name string) string { return filepath.Join(c.dir, "logs", name+".log") }

// procStartTime returns field 22 of /proc/<pid>/stat.
func procStartTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may contain spaces; fields after it follow the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", errors.New("short stat")
	}
	if f[0] == "Z" {
		return "", errors.New("zombie")
	}
	return f[19], nil
}

// running returns the PID of the named component if its PID file points at a live process
// that is the one we started.
func (c *cluster) running(name string) (int, bool) {
	b, err := os.ReadFile(c.pidFile(name))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return 0, false
	}
	st, err := procStartTime(pid)
	if err != nil || st != f[1] {
		return 0, false
	}
	return pid, true
}

// start launches a component in its own session so it outlives this program and is not hit
// by a terminal's Ctrl-C; its output goes to logs/<name>.log.
func (c *cluster) start(name, bin string, args ...string) error {
	if pid, ok := c.running(name); ok {
		c.logf("%s: already running (pid %d)", name, pid)
		return nil
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "run"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		return err
	}
	// Logs survive down for post-mortems; one previous generation is kept so repeated runs
	// do not fill the disk.
	if st, err := os.Stat(c.logFile(name)); err == nil && st.Size() > maxLogBytes {
		_ = os.Rename(c.logFile(name), c.logFile(name)+".1")
	}
	lf, err := os.OpenFile(c.logFile(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	fmt.Fprintf(lf, "\n=== %s starting %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	closeInheritedFiles()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	st, err := procStartTime(pid)
	if err != nil {
		return fmt.Errorf("%s exited immediately; see %s", name, c.logFile(name))
	}
	if err := writeFileAtomic(c.pidFile(name), []byte(fmt.Sprintf("%d %s\n", pid, st)), 0o644); err != nil {
		return err
	}
	// Reap in the background so a component that dies while we wait for it does not linger
	// as a zombie that still looks alive.
	go func() { _ = cmd.Wait() }()
	c.logf("%s: started (pid %d, log %s)", name, pid, c.logFile(name))
	return nil
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs, and removes the PID file.
func (c *cluster) stop(ctx context.Context, name string, grace time.Duration) error {
	pid, ok := c.running(name)
	if !ok {
		_ = os.Remove(c.pidFile(name))
		return nil
	}
	c.logf("%s: stopping (pid %d)", name, pid)
	if err := killWait(ctx, pid, grace); err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	return os.Remove(c.pidFile(name))
}

func killWait(ctx context.Context, pid int, grace time.Duration) error {
	st, err := procStartTime(pid)
	if err != nil {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	gone := func() bool { s, err := procStartTime(pid); return err != nil || s != st }
	if pollUntil(ctx, grace, 100*time.Millisecond, gone) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if pollUntil(ctx, 10*time.Second, 100*time.Millisecond, gone) {
		return nil
	}
	return fmt.Errorf("pid %d survived SIGKILL", pid)
}

// pollUntil calls cond every interval until it is true (returns true) or d or ctx expires.
func pollUntil(ctx context.Context, d, interval time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
}

// processesMatching lists live processes whose command line contains any of the needles,
// excluding this process.
func processesMatching(needles ...string) []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		for _, n := range needles {
			if n != "" && strings.Contains(cmdline, n) {
				if _, err := procStartTime(pid); err == nil {
					out = append(out, procInfo{pid: pid, cmdline: cmdline})
				}
				break
			}
		}
	}
	return out
}

type procInfo struct {
	pid     int
	cmdline string
}

// closeInheritedFiles marks every descriptor above stderr close-on-exec. The components
// outlive this command, and a descriptor it inherited (a caller's lock, a pipe its caller
// waits on) would otherwise stay open in them until the cluster stops: a `flock` taken
// around `make cluster-up` would be held for the cluster's whole life.
func closeInheritedFiles() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
