package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	mod, err := goList("-m")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	// The contract modules (api/memory, conformance) are outside ./... (a module boundary)
	// and are named by import path, so their floors are checked too.
	root := strings.TrimSpace(mod)
	out, err := goList("-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...", root+"/api/memory/...", root+"/conformance/...")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	var problems []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		problems = append(problems, violations(root, fields[0], fields[1:])...)
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		fmt.Fprintf(os.Stderr, "layers: %d arrow(s) run back up the floors (see hack/layers/rules.go)\n", len(problems))
		os.Exit(1)
	}
}

func goList(args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(b), nil
}
