// Package cond holds the small helpers every decision of the MemoryAdapter controller shares:
// a condition value with a bounded message, and cutting text the adapters wrote to a size
// the API server takes. The reconciler and its health and render packages import it, so the
// helpers live below all three.
package cond
