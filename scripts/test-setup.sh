#!/usr/bin/env bash
# What `make test` needs before it runs, on a Debian or Ubuntu machine:
# make, node and npm (payload-hash vectors, axe-core), Chromium (the review
# page's browser test), systemd-analyze (deploy/ unit checks), PostgreSQL's
# initdb/pg_ctl (throwaway clusters: chaos, the demo, pgtemp) and git.
#
# As root it installs whatever is missing with apt (one apt-get update),
# and starts the machine's PostgreSQL clusters when 127.0.0.1:5432 does not
# answer. Otherwise it prints the apt-get command to run and exits 1. It
# never lets a test be skipped: the tests themselves fail when something
# is missing.
#
#   scripts/test-setup.sh          (make test runs it first)
#   scripts/test-setup.sh --check  only report, install and start nothing
set -euo pipefail

check_only=false
[ "${1:-}" = "--check" ] && check_only=true

have_initdb() {
	command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

missing=()
command -v make >/dev/null 2>&1 || missing+=(make)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# runuser lets a throwaway cluster run as a user other than root.
command -v runuser >/dev/null 2>&1 || [ -x /usr/sbin/runuser ] || missing+=(util-linux)
have_initdb || missing+=(postgresql)

if [ ${#missing[@]} -gt 0 ]; then
	if $check_only || [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "make test needs: ${missing[*]}" >&2
		echo "install them, e.g.: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "test-setup: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
	echo "make test needs Go 1.26 (https://go.dev/dl/)" >&2
	exit 1
fi

# The machine's PostgreSQL on 127.0.0.1:5432, if it has one and it is down.
# Without one the tests start a throwaway cluster (testkit/dbtest).
if ! $check_only && [ -z "${SWEEPER_TEST_DATABASE_URL:-}" ] && [ "$(id -u)" -eq 0 ] \
	&& command -v pg_isready >/dev/null 2>&1 && command -v pg_ctlcluster >/dev/null 2>&1 \
	&& ! pg_isready -q -h 127.0.0.1 -p 5432; then
	for version in $(ls /etc/postgresql 2>/dev/null); do
		echo "test-setup: starting PostgreSQL $version"
		pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
	done
fi
