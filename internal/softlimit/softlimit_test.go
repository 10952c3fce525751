package softlimit

import "testing"

func TestFor(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct{ limit, want uint64 }{
		{256 * mi, 192 * mi},            // the deployed manager: 64 MiB below, not 90% (230 MiB)
		{640 * mi, 576 * mi},            // where 90% and BinaryPages meet
		{1024 * mi, 1024 * mi / 10 * 9}, // 90% leaves more than BinaryPages
		{100 * mi, 50 * mi},             // a small container: never under half
	} {
		if got := For(tc.limit); got != tc.want {
			t.Errorf("For(%d MiB) = %d MiB, want %d MiB", tc.limit/mi, got/mi, tc.want/mi)
		}
	}
}
