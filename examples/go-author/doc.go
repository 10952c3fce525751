// Package author is how an adapter author outside this repository adds the conformance
// suite to their own module: one test that judges their running adapter server over the
// wire. Its module requires only the contract and the suite, so nothing from Kubernetes.
package author
