package memory

// The amplification bound: the wire form of an item a store returns (retrieve or search hit)
// is at most MaxAmplificationFactor times the wire form of the item as it was stored, plus
// AmplificationAllowance bytes. Without it a small write can become a huge read (PostgreSQL's
// jsonb prints 1e131071 as 131,072 digits), and one stored item can exhaust the memory of
// every reader. The allowance covers fixed-size differences such as a reformatted timestamp.
const (
	// MaxAmplificationFactor is the bound's factor.
	MaxAmplificationFactor = 2
	// AmplificationAllowance is the bound's constant, in bytes.
	AmplificationAllowance = 1024
)

// WithinAmplification reports whether a returned item of returnedBytes keeps the bound for a
// stored item of storedBytes (both the items' wire forms, Item.MarshalJSON).
func WithinAmplification(storedBytes, returnedBytes int) bool {
	return returnedBytes <= MaxAmplificationFactor*storedBytes+AmplificationAllowance
}
