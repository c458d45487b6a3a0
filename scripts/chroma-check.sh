#!/usr/bin/env bash
# Checks third_party/chroma, the app's copy of chroma whose lexers load on
# first use (third_party/chroma/PILOTDESK.md): the patch's own tests, then
# scripts/chromacheck run on the released chroma of the version go.mod
# names and on the copy must print the same (every lexer name and alias,
# file matches, analysers, the tokens of samples).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=$(go list -m -f '{{.Version}}' github.com/alecthomas/chroma/v2)
(cd third_party/chroma && go test -count=1 ./lexers)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for which in released copy; do
	mkdir -p "$work/$which"
	cp scripts/chromacheck/main.go "$work/$which/"
	printf 'module chromacheck\n\ngo 1.25\n\nrequire github.com/alecthomas/chroma/v2 %s\n' "$version" >"$work/$which/go.mod"
	if [ "$which" = copy ]; then
		echo "replace github.com/alecthomas/chroma/v2 => $root/third_party/chroma" >>"$work/$which/go.mod"
	fi
	(cd "$work/$which" && GOFLAGS=-mod=mod go mod tidy && go run . >"$work/$which.txt")
done
if ! diff -u "$work/released.txt" "$work/copy.txt"; then
	echo "chroma-check: third_party/chroma differs from the released chroma $version (above)" >&2
	exit 1
fi
echo "chroma-check: third_party/chroma sees the same $(head -1 "$work/copy.txt" | cut -d' ' -f2) lexer names and aliases, matches, analysers and tokens as chroma $version"
