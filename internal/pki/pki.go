package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// clockSkew backdates every certificate, so a node whose clock runs a little behind the
// manager's does not reject a certificate issued a moment ago as not yet valid.
const clockSkew = 5 * time.Minute

// CA is a certificate authority: its certificate and the key that signs with it.
type CA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// CertPEM is Cert in PEM, as clients receive it in ca.crt.
	CertPEM []byte
	// KeyPEM is the CA's private key in PEM (PKCS #8).
	KeyPEM []byte
	key    crypto.Signer
}

// NewCA makes a self-signed CA valid from now (less the clock skew) for lifetime.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (*CA, error) {
	if lifetime <= 0 {
		return nil, errors.New("pki: the CA lifetime must be positive")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"memory-adapter-operator"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: sign the CA: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return LoadCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM)
}

// LoadCA reads a CA from its PEM certificate and key, and checks that they belong together
// and that the certificate may sign others.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("pki: the certificate is not a CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, errors.New("pki: the CA key is not a PEM PRIVATE KEY block")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: the CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("pki: the CA key cannot sign")
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, fmt.Errorf("pki: the CA key: %w", err)
	}
	if !bytes.Equal(pub, cert.RawSubjectPublicKeyInfo) {
		return nil, errors.New("pki: the CA key does not match its certificate")
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), KeyPEM: keyPEM, key: signer}, nil
}

// Fingerprint is the SHA-256 of the CA certificate, in hex: what status shows, so a user
// can tell which CA a binding's ca.crt must hold.
func (ca *CA) Fingerprint() string {
	sum := sha256.Sum256(ca.Cert.Raw)
	return hex.EncodeToString(sum[:])
}

// Serving is an issued serving certificate and its key, in PEM.
type Serving struct {
	// CertPEM is the certificate (tls.crt).
	CertPEM []byte
	// KeyPEM is its private key (tls.key).
	KeyPEM []byte
	// NotAfter is when the certificate expires.
	NotAfter time.Time
}

// Issue signs a serving certificate for dnsNames, valid from now (less the clock skew) for
// lifetime, but never past the CA's own expiry.
func (ca *CA) Issue(dnsNames []string, lifetime time.Duration, now time.Time) (*Serving, error) {
	if len(dnsNames) == 0 {
		return nil, errors.New("pki: a serving certificate needs at least one DNS name")
	}
	if lifetime <= 0 {
		return nil, errors.New("pki: the certificate lifetime must be positive")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	// X.509 keeps whole seconds; the returned NotAfter is what the certificate says.
	notAfter := now.Add(lifetime).Truncate(time.Second)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: sign the serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Serving{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM, NotAfter: notAfter}, nil
}

// ParseCertificate reads the first PEM CERTIFICATE block.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("pki: not a PEM CERTIFICATE block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return c, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("pki: serial: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}
