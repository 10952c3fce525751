package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// certManagerModule is cert-manager's module at the version hack/versions.env pins
// (CERT_MANAGER_VERSION; the environment overrides it, as for the other pinned versions).
func certManagerModule() string {
	GinkgoHelper()
	v := os.Getenv("CERT_MANAGER_VERSION")
	if v == "" {
		b, err := os.ReadFile(filepath.Join("..", "..", "hack", "versions.env"))
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(b), "\n") {
			if val, ok := strings.CutPrefix(strings.TrimSpace(line), "CERT_MANAGER_VERSION="); ok {
				v = val
			}
		}
	}
	Expect(v).To(HavePrefix("v"), "CERT_MANAGER_VERSION is not set in hack/versions.env")
	return "github.com/cert-manager/cert-manager@" + v
}

// certManagerCRDs returns the directory of cert-manager's CRDs inside its Go module
// (deploy/crds: controller-gen output, which cert-manager's Helm chart is built from),
// downloading the module from the Go module proxy into the module cache if needed: the only
// source of cert-manager's schemas that needs no download site other than the proxy.
func certManagerCRDs() string {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(c, "go", "mod", "download", "-json", certManagerModule())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "go mod download %s: %s", certManagerModule(), stderr.String())
	var mod struct{ Dir, Error string }
	Expect(json.Unmarshal(stdout.Bytes(), &mod)).To(Succeed())
	Expect(mod.Error).To(BeEmpty())
	dir := filepath.Join(mod.Dir, "deploy", "crds")
	Expect(filepath.Join(dir, "cert-manager.io_certificates.yaml")).To(BeAnExistingFile())
	return dir
}
