// Package runs reads what a conformance or purge Job left behind, with no client and no
// clock of its own: whether the Job ended and why, the report its pod wrote as a termination
// message, why a pod cannot start, how long to wait for a report that is late, and the
// backoff before a failed run is retried. The reconciler observes the Jobs and pods; these
// functions turn them into facts it decides from.
package runs
