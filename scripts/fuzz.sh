#!/usr/bin/env bash
# Runs every FuzzXxx function in a _test.go file, one `go test -fuzz` each
# (Go fuzzes one target per run), stopping at the first failure. A failing
# input is written under the package's testdata/fuzz/FuzzXxx/: commit it
# with the fix, and `go test` replays it from then on.
#
#   scripts/fuzz.sh FUZZTIME [GO] [extra go test flags...]
#
# Go's fuzzing coordinator can fail a run with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is mid-call on a loaded
# machine, having found nothing and written no input. Such a run counts as
# passed only if no new input was written and a replay of the target's
# corpus passes; any other failure fails.
set -uo pipefail
fuzztime=${1:?usage: scripts/fuzz.sh FUZZTIME [GO] [flags...]}
go=${2:-go}
shift $(( $# >= 2 ? 2 : 1 ))

grep -rHo --include='*_test.go' --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*(' . | sort |
while IFS=: read -r file match; do
	name=${match#func }
	name=${name%(}
	dir=$(dirname "$file")
	echo "== $name in $dir for $fuzztime"
	corpus="$dir/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | sort)
	out=$(mktemp)
	if "$go" test -run='^$' -fuzz="^$name\$" -fuzztime="$fuzztime" "$@" "$dir" 2>&1 | tee "$out"; then
		rm -f "$out"
		continue
	fi
	after=$(ls "$corpus" 2>/dev/null | sort)
	if [ "$before" = "$after" ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
		rm -f "$out"
		echo "== $name: the fuzzing coordinator's deadline race, no input written; replaying the corpus"
		if "$go" test -count=1 -run="^$name\$" "$dir"; then
			continue
		fi
	fi
	rm -f "$out"
	exit 1
done
