package twilio

import (
	"context"

	openapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// SDKForTest returns the twilio-go Messages API that a's lookups use,
// bound to ctx, so tests can show that even the SDK's create, update and
// delete calls cannot get through it.
func SDKForTest(ctx context.Context, a *Adapter) *openapi.ApiService { return a.api(ctx) }

// Withhold is the adapter's last guard against errors naming a secret or
// the recipient.
func Withhold(a *Adapter, err error, recipient string) error { return a.withhold(err, recipient) }
