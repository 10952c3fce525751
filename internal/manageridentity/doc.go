// Package manageridentity installs the manager's identity on a test API server as
// config/default ships it, for the envtest suites: the ClusterRole and Role that controller-gen
// generates (config/rbac/role.yaml) bound to the manager's ServiceAccount, and the admission
// policies of config/policy that narrow what that ServiceAccount may write. It returns a
// client config that impersonates the ServiceAccount, so a suite's manager, and a spec playing
// an attacker, hold exactly the installed privileges: a permission the markers do not grant, a
// write the policies refuse, or a Secret read fails there as it would in a cluster.
//
// It is test support: no production binary imports it.
package manageridentity
