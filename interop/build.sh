#!/usr/bin/env bash
# Bundles src/*.ts (with @moq/net and @moq/hang from node_modules) into dist/
# for Deno. Called by scripts/interop-setup.sh.
set -euo pipefail
cd "$(dirname "$0")"
node_modules/.bin/esbuild src/publish.ts src/subscribe.ts src/layouts.ts src/token.ts \
	--bundle --format=esm --platform=browser --target=esnext \
	--outdir=dist --log-level=warning
# The browser publisher page's script (TestBrowserPublisherIntoListen):
# @moq/publish's <moq-publish> element, bundled as a page would ship it.
node_modules/.bin/esbuild browser/publish.ts browser/ietf-publish.ts \
	--bundle --format=esm --platform=browser --target=esnext \
	--outdir=dist/browser --log-level=warning
