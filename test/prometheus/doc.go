// Package prometheus holds the tests of the shipped Prometheus objects in config/prometheus:
// that the PrometheusRule carries exactly the plain rules file's groups. The rules' behaviour
// is tested by promtool against alerts_test.yaml (hack/test.sh), not in Go.
package prometheus
