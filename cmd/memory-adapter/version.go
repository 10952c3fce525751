package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

func adapterVersion() string {
	if commit != "" {
		return version + "+" + commit
	}
	return version
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the adapter version, the conformance suite version and build info",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "adapter version: %s\n", adapterVersion())
			fmt.Fprintf(out, "suite version:   %s\n", conformance.SuiteVersion)
			fmt.Fprintf(out, "go:              %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if bi, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(out, "module:          %s %s\n", bi.Main.Path, bi.Main.Version)
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision", "vcs.time", "vcs.modified", "CGO_ENABLED":
						fmt.Fprintf(out, "%-16s %s\n", s.Key+":", s.Value)
					}
				}
			}
			fmt.Fprintf(out, "backends:        %s\n", backendNames())
			return nil
		},
	}
}
