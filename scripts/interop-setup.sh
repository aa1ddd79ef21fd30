#!/usr/bin/env bash
# Installs the reference implementation the interop tests (package interop)
# run against: @moq/net, @moq/hang, Deno and esbuild, pinned in
# interop/package-lock.json, then bundles interop/src/*.ts into interop/dist/.
# Needs node and npm (the npm registry). Fast when already done: npm ci runs
# only when the lockfile changed since the last install.
# Usage: scripts/interop-setup.sh   (then: MOQ_INTEROP_REQUIRED=1 go test ./interop/)
set -euo pipefail
cd "$(dirname "$0")/../interop"

stamp=node_modules/.moq-interop-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	npm ci --no-audit --no-fund --loglevel=error
	echo "$want" >"$stamp"
fi

./build.sh

# The deno npm package ships the binary; fail here, not in the Go tests.
deno=node_modules/.bin/deno
[ -s "$deno" ] && [ "$(stat -Lc %s "$deno")" -gt 1048576 ] || deno=$(ls node_modules/@deno/*/deno | head -1)
"$deno" --version | head -1
