package khive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// stderrTail bounds how much of the child's stderr the adapter keeps for error messages.
const stderrTail = 4 << 10

// process is a Transport over a child process's stdin and stdout. The SDK's
// CommandTransport is not used: it caps a frame at 16 MiB whatever MaxResponseBytes says,
// and its Close waits seconds for a graceful exit and then signals only the child, where
// the store must end the child and its helpers at once (a hung call, a harness cut).
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer

	once     sync.Once
	waitErr  error
	killOnce sync.Once
}

// ProcessDialer returns a Dialer that starts command with args (and the adapter's
// environment plus env) as a child process. The child is not tied to the context of the
// call that starts it: it serves every later call until it dies or the store closes.
func ProcessDialer(command string, args, env []string) Dialer {
	return func(ctx context.Context) (Transport, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cmd := exec.Command(command, args...) //nolint:gosec // the command is the operator's configuration, not request data
		cmd.Env = append(os.Environ(), env...)
		// Its own process group: a signal meant for the adapter (Ctrl-C in a terminal) does not
		// also kill the child mid-call, and Close reaps helpers the child may have spawned.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p := &process{cmd: cmd, stderr: &tailBuffer{max: stderrTail}}
		var err error
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if p.stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
		cmd.Stderr = p.stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", command, err)
		}
		return p, nil
	}
}

func (p *process) Read(b []byte) (int, error) {
	n, err := p.stdout.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	if errors.Is(err, io.EOF) {
		// Say why the child ended: exit status and the tail of its stderr.
		return n, &exitError{status: p.wait(), stderr: p.stderr.String()}
	}
	return n, nil
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close kills the child's process group and reaps it. It is idempotent, and signals the
// group only once: once reaped, its id may belong to another process.
func (p *process) Close() error {
	p.killOnce.Do(func() {
		_ = p.stdin.Close()
		if p.cmd.Process != nil {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = p.wait()
	})
	return nil
}

func (p *process) wait() error {
	p.once.Do(func() { p.waitErr = p.cmd.Wait() })
	return p.waitErr
}

// pid returns the child's process id (tests kill it to cut a call short).
func (p *process) pid() int { return p.cmd.Process.Pid }

// exitError is the end of the child's output: how it exited and what it last said.
type exitError struct {
	status error
	stderr string
}

func (e *exitError) Error() string {
	s := "the khive child process ended"
	if e.status != nil {
		s += " (" + e.status.Error() + ")"
	}
	if e.stderr != "" {
		s += "; stderr: " + truncate(e.stderr, 500)
	}
	return s
}

// Unwrap keeps io.EOF visible to errors.Is.
func (e *exitError) Unwrap() error { return io.EOF }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
