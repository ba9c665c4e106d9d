#!/usr/bin/env bash
# Refresh the web UI's vendored libraries from the npm registry (versions pinned in package-lock.json):
#   cd webui && npm ci && bash vendor.sh
# The built files and their licences are committed, so neither installing nor testing reasonloop runs npm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
out=../src/reasonloop/server/web/static/vendor
mkdir -p "$out/licenses"
cp node_modules/markdown-it/dist/markdown-it.min.js "$out/markdown-it.min.js"
cp node_modules/dompurify/dist/purify.min.js "$out/purify.min.js"
# markdown-it's built file bundles these packages: each licence goes with it.
for pkg in markdown-it dompurify entities linkify-it mdurl punycode.js uc.micro; do
    cp "$(ls node_modules/$pkg/LICENSE* | head -n 1)" "$out/licenses/$pkg.LICENSE"
done
