#!/usr/bin/env bash
# Runs every fuzz target of the module in turn for FUZZTIME each (default 1m).
# go test keeps new interesting inputs in its cache; a crasher is written to the
# package's testdata/fuzz/<Target>/ and fails the run. Copy the cache's corpus into
# testdata (see docs/testing.md) to keep what a long run found.
#
# Usage: hack/fuzz.sh [FUZZTIME]
set -euo pipefail
fuzztime=${1:-1m}
cd "$(dirname "$0")/.."
status=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s "$pkg"; then
			status=1
		fi
	done
done
exit $status
