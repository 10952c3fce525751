package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "memory-adapter",
		Short:         "Serve a memory adapter over HTTP, or run its conformance matrix",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newConformanceCommand(), newVersionCommand(), newPurgeCommand(), newAgentCheckCommand(), newTokenCommand())
	return root
}

func main() {
	err := newRootCommand().Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "memory-adapter:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(1)
}
