package config

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Warnings lists what the configuration allows but an operator most
// likely did not mean, each naming its keys: check-config prints them as
// comments and `run` logs them at start. None stops sweeper.
func (c *Config) Warnings() []string {
	var warnings []string
	if c.Slack.Channel != "" {
		// Interactivity is on: a request signed with the signing secret is
		// accepted from whichever workspace and app carry it.
		var unset []string
		if c.Slack.TeamID == "" {
			unset = append(unset, "slack.team_id")
		}
		if c.Slack.AppID == "" {
			unset = append(unset, "slack.app_id")
		}
		if len(unset) > 0 {
			warnings = append(warnings, strings.Join(unset, " and ")+" unset: Slack's button clicks are accepted from any "+
				"workspace and app whose requests carry the signing secret; set them to your workspace's (T…) and app's (A…) ids")
		}
	}
	for _, email := range sortedKeys(c.Web.Users) {
		if strings.ContainsFunc(email, func(r rune) bool { return r >= utf8.RuneSelf }) {
			// An internationalized address is allowed, but the proxy must
			// send it exactly so: only ASCII letters fold.
			warnings = append(warnings, "web.users."+strconv.Quote(email)+" has characters outside ASCII: the proxy's e-mail "+
				"must match them exactly as written (only A–Z and a–z fold), so a look-alike never signs in as this person")
		}
	}
	return warnings
}
