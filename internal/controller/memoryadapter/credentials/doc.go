// Package credentials loads the operator's own credentials at start: the key every adapter's
// bearer token is derived from, and the CA that issues the adapters' serving certificates.
// Each lives in a Secret of the operator's namespace, created on first start; these two are
// the only Secrets the manager ever reads, and it reads them from the API server, never
// through a cache.
package credentials
