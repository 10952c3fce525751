// Package fake is the deterministic, fault-injecting fake of ADR-0093 D2: an in-process
// "service" with a native record format, a transport to it, an adapter that maps the memory
// contract onto that transport, and a conformance harness over all three.
//
// Every behavior is a knob. ServiceKnobs change what the service does (an eventually
// maintained index, tags missing from search hits, metadata dropped or altered, timestamps
// normalised, a closed set of filterable keys, outages that lose responses mid-call); a
// correct adapter over such a service stays conformant when its manifest tells the truth,
// and TruthfulManifest computes that manifest. AdapterKnobs inject adapter defects (coercing
// wrong-kind records, hiding outages, sending limit=0 to the service, ignoring unsupported
// filters, ...); no manifest makes those conformant. The conformance package's accuracy table
// pairs every knob with a manifest or adapter that claims the opposite and proves that the
// suite fails on the expected cases.
//
// Everything is deterministic: there are no goroutines, timers or randomness beyond fresh
// UUIDs, and the eventual index converges exactly when the harness's
// MakeSearchIndexVisible is called.
//
// The package does not import the conformance package; the harness satisfies its optional
// capability interfaces structurally.
package fake
