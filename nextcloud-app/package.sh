#!/usr/bin/env bash
# Produces build/tamebi.tar.gz: an installable app archive with a top-level tamebi/ folder holding
# only what Nextcloud runs (appinfo, lib, templates, js, css, img, l10n), never tests or dev files.
set -euo pipefail
app=$(cd "$(dirname "$0")" && pwd)
"$app/build.sh"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tamebi"
for dir in appinfo lib templates js css img l10n; do
  cp -r "$app/$dir" "$stage/tamebi/$dir"
done
find "$stage/tamebi" -name '.gitkeep' -delete
mkdir -p "$app/build"
tar -czf "$app/build/tamebi.tar.gz" -C "$stage" --owner=0 --group=0 --sort=name tamebi
echo "wrote $app/build/tamebi.tar.gz"
