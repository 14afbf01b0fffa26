#!/usr/bin/env bash
# Builds the island bundles (when ../island exists) and copies their fixed files into js/ and css/:
# tamebi-island (the chat, every page) and tamebi-admin (the registry editor of the admin settings).
set -euo pipefail
app=$(cd "$(dirname "$0")" && pwd)
island="$app/../island"
if [ -d "$island" ]; then
  (cd "$island" && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build)
  for bundle in tamebi-island tamebi-admin; do
    cp "$island/dist/$bundle.js" "$app/js/$bundle.js"
    cp "$island/dist/$bundle.css" "$app/css/$bundle.css"
  done
  echo "island bundles copied into js/ and css/"
else
  echo "no island/ next to the app: keeping js/ and css/ as they are"
fi
