package main

import (
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// TestCheckConfigWarnsOfUncheckedInteractivity: Slack's buttons on
// without slack.team_id or slack.app_id is valid (exit 0) but said, as a
// comment, naming the keys left unset; so is a web.users address outside
// ASCII, which is matched exactly as written.
func TestCheckConfigWarnsOfUncheckedInteractivity(t *testing.T) {
	t.Parallel()
	const base = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"

[providers.sim]
kind = "sim"
simulated = true
`
	environ := map[string]string{config.EnvSlackToken: "xoxb-test", config.EnvSlackSigning: "signing-secret"}
	for _, tc := range []struct {
		desc, slack, want string
	}{
		{desc: "Slack off", slack: ""},
		{desc: "neither id", slack: "[slack]\nchannel = \"C0REVIEW01\"\n",
			want: "# warning: slack.team_id and slack.app_id unset: Slack's button clicks are accepted from any workspace and app"},
		{desc: "no app id", slack: "[slack]\nchannel = \"C0REVIEW01\"\nteam_id = \"T0TEAM0001\"\n", want: "# warning: slack.app_id unset: "},
		{desc: "both ids", slack: "[slack]\nchannel = \"C0REVIEW01\"\nteam_id = \"T0TEAM0001\"\napp_id = \"A0APP00001\"\n"},
		// Not Slack's, but said the same way: an address outside ASCII is
		// matched exactly, and the operator is told.
		{desc: "web.users outside ASCII", slack: "[web.users]\n\"jos\u00e9@example.com\" = \"U0JOSE\"\n\"ann@example.com\" = \"U0ANN\"\n",
			want: "# warning: web.users.\"jos\u00e9@example.com\" has characters outside ASCII: the proxy's e-mail must match them exactly"},
		{desc: "web.users in ASCII", slack: "[web.users]\n\"Ann@Example.com\" = \"U0ANN\"\n"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, environ, "check-config", "--config", writeConfig(t, base+tc.slack))
			if r.code != exitOK {
				t.Fatalf("check-config: code %d\n%s", r.code, r.stderr)
			}
			if tc.want == "" && strings.Contains(r.stdout, "warning") {
				t.Errorf("a warning without cause:\n%s", r.stdout)
			}
			if tc.want != "" && !strings.Contains(r.stdout, tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, r.stdout)
			}
		})
	}
}
