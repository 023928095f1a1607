package sim

import "github.com/sweeper/sweeper/providers"

// Matching implements providers.MatchingLookup: the simulated provider's
// rules match on the op_key.
func (s *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }
