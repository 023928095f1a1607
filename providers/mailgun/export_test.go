package mailgun

import mg "github.com/mailgun/mailgun-go/v4"

// SDKForTest returns mailgun-go's client as a's lookups hold it, so tests
// can show that even its send and write calls cannot get through.
func SDKForTest(a *Adapter) *mg.MailgunImpl { return a.sdk() }
