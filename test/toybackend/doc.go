// Package toybackend is a backend added the way docs/development.md ("Adding a backend")
// walks it: one package that registers its entry of adapters/backend's table from init, and
// nothing else. The controller's envtest suite imports it, adds its type to the CRD as the
// walkthrough's enum line would, and deploys it, so the walkthrough is checked by a test. It
// stores items in the in-memory reference store and is judged against the conformance fake;
// no binary ships it.
package toybackend
