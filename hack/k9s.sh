#!/usr/bin/env bash
# Builds k9s, the peer that BenchmarkTUIScale (cmd/interactive) measures mcotui's TUI
# against, from the Go module proxy into DIR/k9s-VERSION/k9s. Only `make bench` needs it,
# so `make testbin` does not build it: it is big (several minutes on 2 cores). A binary
# already in place is kept. The version must match k9sVersion in
# cmd/interactive/scale_bench_test.go.
#
# Usage: hack/k9s.sh DIR
set -euo pipefail

K9S_VERSION=v0.50.16
GO=${GO:-go}

[[ $# -eq 1 && -n $1 ]] || { echo "k9s: usage: $0 DIR" >&2; exit 1; }
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
OUT=$DIR/k9s-$K9S_VERSION
[[ -x $OUT/k9s ]] && exit 0

# Two runs at once wait for each other rather than race on the same files.
if command -v flock >/dev/null; then
	exec 9>"$DIR/.k9s.lock"
	flock 9
	[[ -x $OUT/k9s ]] && exit 0
fi
# Built into a folder of its own and renamed, so that a build cut short leaves nothing
# that looks done. Outside any module and workspace: go install pkg@version alone.
TMP=$(mktemp -d "$DIR/.k9s-build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "k9s: building github.com/derailed/k9s@$K9S_VERSION (a few minutes)" >&2
(cd "$TMP" && GOWORK=off GOFLAGS= GOBIN="$TMP/bin" "$GO" install "github.com/derailed/k9s@$K9S_VERSION")
rm -rf "$OUT"
mv "$TMP/bin" "$OUT"
