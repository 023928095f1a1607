package twilio

import "github.com/sweeper/sweeper/providers"

// Matching implements providers.MatchingLookup: Twilio's message list is
// searched by recipient (in E.164) and date, so a message is tied to an
// operation by resemblance — recipient, body and time — and only inside
// the operation's own window.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{Phone: true} }
