package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// certSpec describes one leaf certificate signed by the cluster CA.
type certSpec struct {
	name   string // file stem under pki/
	cn     string
	orgs   []string
	ips    []net.IP
	dns    []string
	server bool
	client bool
}

// certValidity is long enough that a kept development cluster does not expire mid-week, and
// short enough that a leaked key from a throwaway cluster is not useful for long.
const certValidity = 365 * 24 * time.Hour

func (c *cluster) pkiDir() string { return filepath.Join(c.dir, "pki") }

func (c *cluster) certSpecs() []certSpec {
	nodeIP := net.ParseIP(c.nodeIP)
	specs := []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			ips: []net.IP{nodeIP, net.IPv4(127, 0, 0, 1), net.ParseIP(apiServiceIP)},
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc." + clusterDomain}},
		{name: "admin", cn: "mao-admin", orgs: []string{"system:masters"}, client: true},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true},
		{name: "controller-manager", cn: "system:kube-controller-manager", client: true},
		{name: "scheduler", cn: "system:kube-scheduler", client: true},
		{name: "kube-proxy", cn: "system:kube-proxy", client: true},
		{name: netpolAgent, cn: "system:" + netpolAgent, client: true},
	}
	// Every node that NODES may ask for gets its identity now, so a cluster brought up again
	// with more nodes keeps its CA and the kubeconfigs users exported.
	for i := 1; i <= maxNodes; i++ {
		n := c.node(i)
		specs = append(specs,
			certSpec{name: n.certStem("kubelet-client"), cn: "system:node:" + n.name, orgs: []string{"system:nodes"}, client: true},
			certSpec{name: n.certStem("kubelet"), cn: n.name, server: true, ips: []net.IP{net.ParseIP(n.ip), net.IPv4(127, 0, 0, 1)},
				dns: []string{n.name, "localhost"}})
	}
	return specs
}

// certStem is the file stem of one of node n's certificates: the first node's keep the
// names a single-node cluster always used.
func (n node) certStem(stem string) string {
	if n.index == 1 {
		return stem
	}
	return stem + "-" + n.name
}

// kubeletKubeconfig is the kubeconfig node n's kubelet uses.
func (c *cluster) kubeletKubeconfig(n node) string {
	return filepath.Join(c.dir, n.certStem("kubelet")+".kubeconfig")
}

// ensurePKI creates the CA, the leaf certificates, the service-account key pair and the
// kubeconfigs. Existing material is reused unless the node IP it was issued for changed,
// so a second cluster-up does not invalidate kubeconfigs users already exported.
func (c *cluster) ensurePKI() error {
	dir := c.pkiDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if c.pkiCurrent() {
		c.logf("certificates: reusing %s", dir)
		return nil
	}
	c.logf("certificates: issuing a new CA and component certificates in %s", dir)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mao-cluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCertKey(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	for _, s := range c.certSpecs() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
			NotBefore:    now,
			NotAfter:     now.Add(certValidity),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			IPAddresses:  s.ips,
			DNSNames:     s.dns,
		}
		if s.server {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
		if s.client {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("issuing %s: %w", s.name, err)
		}
		if err := writeCertKey(dir, s.name, der, key); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.key"), "EC PRIVATE KEY", saDER, 0o600); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pubDER, 0o644); err != nil {
		return err
	}
	for _, kc := range []struct{ file, cert string }{
		{"admin.kubeconfig", "admin"},
		{"controller-manager.kubeconfig", "controller-manager"},
		{"scheduler.kubeconfig", "scheduler"},
		{"kube-proxy.kubeconfig", "kube-proxy"},
		{netpolAgent + ".kubeconfig", netpolAgent},
	} {
		if err := c.writeKubeconfig(filepath.Join(c.dir, kc.file), kc.cert); err != nil {
			return err
		}
	}
	for i := 1; i <= maxNodes; i++ {
		n := c.node(i)
		if err := c.writeKubeconfig(c.kubeletKubeconfig(n), n.certStem("kubelet-client")); err != nil {
			return err
		}
	}
	// Written last: its presence marks the PKI as complete (see pkiCurrent).
	return os.WriteFile(filepath.Join(dir, "node-ip"), []byte(c.nodeIP+"\n"), 0o644)
}

// pkiCurrent reports whether a complete PKI for the current node IP exists.
func (c *cluster) pkiCurrent() bool {
	b, err := os.ReadFile(filepath.Join(c.pkiDir(), "node-ip"))
	if err != nil || string(bytes.TrimSpace(b)) != c.nodeIP {
		return false
	}
	for _, f := range []string{"ca.crt", "sa.key", "sa.pub", "apiserver.crt", "kubelet.crt", netpolAgent + ".crt", c.node(maxNodes).certStem("kubelet") + ".crt"} {
		if _, err := os.Stat(filepath.Join(c.pkiDir(), f)); err != nil {
			return false
		}
	}
	crt, err := readCert(filepath.Join(c.pkiDir(), "apiserver.crt"))
	if err != nil || time.Until(crt.NotAfter) < 24*time.Hour {
		return false
	}
	return slices.ContainsFunc(crt.IPAddresses, func(ip net.IP) bool { return ip.String() == c.nodeIP })
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block in " + path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		// crypto/rand never fails on Linux; a fixed serial would still produce a usable cert.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeCertKey(dir, stem string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, stem+".key"), "EC PRIVATE KEY", kb, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, stem+".crt"), "CERTIFICATE", der, 0o644)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded) so the admin
// file can be copied elsewhere and still work.
func (c *cluster) writeKubeconfig(path, certStem string) error {
	read := func(f string) (string, error) {
		b, err := os.ReadFile(filepath.Join(c.pkiDir(), f))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(certStem + ".crt")
	if err != nil {
		return err
	}
	key, err := read(certStem + ".key")
	if err != nil {
		return err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: mao
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: mao
  context:
    cluster: mao
    user: %s
current-context: mao
`, c.apiURL(), ca, certStem, crt, key, certStem)
	return writeFileAtomic(path, []byte(kc), 0o600)
}
