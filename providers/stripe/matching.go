package stripe

import "github.com/sweeper/sweeper/providers"

// Matching implements providers.MatchingLookup: the Search API selects
// objects by the op_key in their metadata, and every object's key is
// compared again, so a record names its operation.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }
