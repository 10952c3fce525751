// Command khivefake runs the khive fake MCP server on stdin and stdout, accepting the
// kkernel flags the khive adapter passes: `khivefake mcp --namespace NS --db STATE.json`.
// The state file is shared with the test harness that started it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "mcp" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("khivefake", flag.ContinueOnError)
	ns := fs.String("namespace", "local", "the process namespace (kkernel --namespace)")
	db := fs.String("db", "", "the state file shared with the harness (kkernel --db)")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if *db == "" {
		fmt.Fprintln(os.Stderr, "khivefake: --db is required")
		os.Exit(2)
	}
	s := &khivefake.Server{Backing: khivefake.File{Path: *db}, Namespace: *ns}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "khivefake:", err)
		if errors.Is(err, khivefake.ErrExit) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}
