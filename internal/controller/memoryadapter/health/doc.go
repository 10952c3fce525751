// Package health is the MemoryAdapter controller's room for health evidence: the client that
// reads an adapter's GET /v1/evidence, the Prober that reads every adapter pod on its health
// period away from the reconcile workers, and the pure decision of the Healthy condition from
// what was read. The Prober's state is a cache: a target it does not know starts from the
// adapter's status.evidence, so a restarted or newly elected manager decides nothing until a
// read finds something new.
package health
