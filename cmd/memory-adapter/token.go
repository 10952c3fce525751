package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// tokenBytes is the entropy of a generated token, as much as the operator's derived ones.
const tokenBytes = 32

// newTokenCommand writes fresh random bearer tokens. The operator's conformance Job for an
// External adapter runs it as its first init step, into a memory-backed emptyDir, so the
// disposable harness-mode instance and the conformance container share per-run tokens that
// exist nowhere in the API: the operator has no right to read Secrets, and a token in the
// Job spec would be readable by anyone who can read Jobs.
func newTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "token FILE...",
		Short: "Write a fresh random bearer token to each new FILE (mode 0400)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			for _, f := range files {
				if err := writeToken(f); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// writeToken creates path, refusing an existing file: a token that was already handed to a
// server must not change under it.
func writeToken(path string) error {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(b) + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("token file %s: %w", path, err)
	}
	return nil
}
