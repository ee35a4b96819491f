#!/bin/sh
# Regenerates TestToken.abi and TestToken.bin from TestToken.sol with the solc
# version pinned in package-lock.json. Needs node and npm (the npm registry);
# the Go build never does: it embeds the committed artifacts.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
node build.js
