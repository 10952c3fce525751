package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTokenWritesDistinctPrivateTokensAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, _, err := execute(t, "token", a, b); err != nil {
		t.Fatal(err)
	}
	ta, err := readSecretFile(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := readSecretFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ta) != 2*tokenBytes || len(tb) != 2*tokenBytes || ta == tb {
		t.Errorf("want two distinct %d-hex-digit tokens, got lengths %d and %d (equal: %v)", 2*tokenBytes, len(ta), len(tb), ta == tb)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("token file mode: %v %v, want 0400", fi.Mode().Perm(), err)
	}
	if _, _, err := execute(t, "token", a); err == nil {
		t.Error("an existing token file was overwritten")
	}
	if again, _ := readSecretFile(a); again != ta {
		t.Error("the existing token changed")
	}
	if _, _, err := execute(t, "token"); err == nil {
		t.Error("token without a file succeeded")
	}
}
