#!/usr/bin/env bash
# The test suite: formatting, vet, and every test with the race detector.
# On a fresh machine it first installs what the tests need
# (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ffprobe >/dev/null || ! command -v mkvmerge >/dev/null || ! command -v chromium >/dev/null; then
	scripts/install-test-deps.sh
fi
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -race -timeout 15m ./...
