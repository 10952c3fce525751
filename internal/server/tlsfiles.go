package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertificateFiles serves a key pair read from two files and picks up a new pair when the
// files change, so a certificate the operator renews (the kubelet swaps the mounted Secret's
// files in place) takes effect for new connections without a restart and without dropping
// the connections already open.
type CertificateFiles struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
}

// fileStamp is what a changed file changes: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// recheckEvery bounds how often a handshake looks at the files: at most one stat pair a
// second, however many connections arrive.
const recheckEvery = time.Second

// recheckDue reports whether a look at the files is due, and if so counts it as taken; the
// caller holds the lock that guards checked.
func recheckDue(checked *time.Time, now time.Time) bool {
	if now.Sub(*checked) < recheckEvery {
		return false
	}
	*checked = now
	return true
}

// LoadCertificateFiles reads the pair once, failing if it does not load, so a server never
// starts without a certificate.
func LoadCertificateFiles(certFile, keyFile string, log *slog.Logger) (*CertificateFiles, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("both a certificate file and a key file are needed")
	}
	c := &CertificateFiles{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func stampOf(fi os.FileInfo) fileStamp { return fileStamp{mod: fi.ModTime(), size: fi.Size()} }

func (c *CertificateFiles) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, err
		}
		s[i] = stampOf(fi)
	}
	return s, nil
}

// reload reads both files; the caller holds mu or owns c exclusively.
func (c *CertificateFiles) reload() error {
	s, err := c.stamps()
	if err != nil {
		return fmt.Errorf("tls key pair: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls key pair: %w", err)
	}
	c.cert, c.stamp, c.checked = &pair, s, c.now()
	return nil
}

// GetCertificate implements tls.Config.GetCertificate. A pair that fails to load (the files
// caught between two writes) keeps the previous one in service and is tried again later.
func (c *CertificateFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !recheckDue(&c.checked, c.now()) {
		return c.cert, nil
	}
	s, err := c.stamps()
	if err != nil || s == c.stamp {
		return c.cert, nil
	}
	if err := c.reload(); err != nil {
		if c.log != nil {
			c.log.Warn("Keeping the previous TLS certificate", "error", err)
		}
		return c.cert, nil
	}
	if c.log != nil {
		c.log.Info("Serving a renewed TLS certificate", "notAfter", c.cert.Leaf.NotAfter)
	}
	return c.cert, nil
}

// TLSConfig is the server's TLS configuration around the files.
func (c *CertificateFiles) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}
