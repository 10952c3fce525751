package softlimit

import (
	"github.com/KimMachineGun/automemlimit/memlimit"
)

// BinaryPages is the room left below the container's limit for the manager's binary: the
// pages of its code and read-only data that it touches, file-backed, so outside the Go
// runtime's accounting yet in its RSS and charged to its container (63 MB with 10,000
// adapters while the manager still linked the database drivers, which made its mapped binary
// 74 MB instead of 55; docs/operator.md, "What the manager holds in memory"). A soft limit of
// 90% of a 256Mi container left 26 MiB for them, and the RSS rose to 287 MiB.
const BinaryPages = 64 << 20

// For returns the soft limit for a container limited to limit bytes: 90% of it (automemlimit's
// default), but never closer to it than BinaryPages, and never under half of it.
func For(limit uint64) uint64 {
	soft := limit / 10 * 9
	if limit-soft < BinaryPages {
		soft = limit - min(BinaryPages, limit/2)
	}
	return soft
}

// Set sets GOMEMLIMIT to For the cgroup's memory limit, as memlimit.Set would set 90% of it:
// GOMEMLIMIT or AUTOMEMLIMIT=off in the environment take precedence, no cgroup limit leaves
// none, and it returns the limit set.
func Set() (int64, error) {
	return memlimit.Set(memlimit.WithRatio(1), memlimit.WithProvider(func() (uint64, error) {
		limit, err := memlimit.FromCgroup()
		if err != nil {
			return 0, err
		}
		return For(limit), nil
	}))
}
