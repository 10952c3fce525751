// Package pki is the operator's certificate authority for adapter endpoints: a CA kept in
// one Secret of the manager's namespace, and the short-lived serving certificates it issues
// for each adapter's Service names. Everything is standard X.509 in PEM (crypto/x509), so
// the CA a client finds in a binding's ca.crt is what any TLS library reads.
package pki
