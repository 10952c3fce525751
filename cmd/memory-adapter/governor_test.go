package main

import (
	"errors"
	"strings"
	"testing"
)

// TestGovernorFlagsRefuseNegativeValues: the operator renders spec.retention and spec.quota
// as these flags, so a value the adapter cannot enforce stops the server with a usage error
// naming the flag, never a silent "no limit".
func TestGovernorFlagsRefuseNegativeValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--retention-max-age", "-1h"}, "--retention-max-age must not be negative"},
		{[]string{"--retention-max-age", "10ms"}, "--retention-max-age must be at least 1s"},
		{[]string{"--retention-max-items", "-5"}, "--retention-max-items must not be negative"},
		{[]string{"--retention-sweep-period", "-1m"}, "--retention-sweep-period must not be negative"},
		{[]string{"--quota-max-items", "-1"}, "--quota-max-items must not be negative"},
		{[]string{"--quota-max-bytes", "-1"}, "--quota-max-bytes must not be negative"},
		{[]string{"--quota-write-rate", "-0.5"}, "--quota-write-rate must be a finite number"},
		{[]string{"--quota-write-rate", "NaN"}, "--quota-write-rate must be a finite number"},
		{[]string{"--quota-write-burst", "-2", "--quota-write-rate", "1"}, "--quota-write-burst must not be negative"},
		{[]string{"--quota-write-burst", "5"}, "--quota-write-burst needs --quota-write-rate"},
	} {
		_, _, err := execute(t, append([]string{"serve", "--backend", "inmemory", "--insecure-no-token", "--listen", "127.0.0.1:0"}, tc.args...)...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}
