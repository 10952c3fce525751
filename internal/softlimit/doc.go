// Package softlimit chooses the manager's soft memory limit (GOMEMLIMIT) from its
// container's memory limit, leaving room for what the Go runtime does not count: the pages of
// the manager's own binary.
package softlimit
