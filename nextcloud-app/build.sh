#!/usr/bin/env bash
# Builds the island bundle (when ../island exists) and copies its two fixed files into js/ and css/.
set -euo pipefail
app=$(cd "$(dirname "$0")" && pwd)
island="$app/../island"
if [ -d "$island" ]; then
  (cd "$island" && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build)
  cp "$island/dist/tamebi-island.js" "$app/js/tamebi-island.js"
  cp "$island/dist/tamebi-island.css" "$app/css/tamebi-island.css"
  echo "island bundle copied into js/ and css/"
else
  echo "no island/ next to the app: keeping js/ and css/ as they are"
fi
