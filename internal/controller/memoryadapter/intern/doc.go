// Package intern holds the manager's bounded tables of values its caches repeat: a
// vocabulary of strings (Words), lists (Lists) and settings (Values) that many cached objects
// hold alike. A cached object refers to the table's copy instead of a decoded copy of its
// own, which at 10,000 adapters is tens of megabytes. Sharing is sound only where nothing
// writes to what it shares: the informer cache hands its readers deep copies, and its event
// handlers only read. Every table stops learning at a bound, so a cluster with unbounded
// names costs it a bounded table.
package intern
