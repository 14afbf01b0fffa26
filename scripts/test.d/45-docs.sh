#!/usr/bin/env bash
# The docs site (docs/, Rspress): builds it, checks that every page and the rendered diagrams are
# in the output, then proves the build's guards hold: a copy of the site with one dead link, one
# link to a missing repository file and one diagram that is not valid mermaid must fail to build, naming
# each. A dead link or a failed build fails this suite.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/docs"

npm run build
for page in index using architecture; do test -s "doc_build/$page.html" || { echo "docs: doc_build/$page.html missing" >&2; exit 1; }; done
for md in *.md; do test -s "doc_build/${md%.md}.html" || { echo "docs: $md was not built" >&2; exit 1; }; done
diagrams=$(grep -o 'data:image/svg+xml;base64' doc_build/architecture.html | wc -l)
[ "$diagrams" -ge 3 ] || { echo "docs: architecture.html has $diagrams rendered diagrams, expected 3" >&2; exit 1; }
echo "docs: $(find doc_build -maxdepth 1 -name '*.html' | wc -l) pages built, $diagrams diagrams rendered on the architecture page"

# The guards: the same site in a scratch copy, with three broken pages.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/docs"
# The repository around it, so links from pages to repository files resolve as they do here.
for entry in "$TAMEBI_ROOT"/*; do [ "$entry" = "$TAMEBI_ROOT/docs" ] || ln -s "$entry" "$scratch/"; done
cp -r ./*.md rspress.config.ts package.json site "$scratch/docs/"
ln -s "$PWD/node_modules" "$scratch/docs/node_modules"
# One mistake per page: a page stops at its first error, every page is reported.
printf '# Dead link\n\nA [page that does not exist](no-such-page.md).\n' >"$scratch/docs/broken-link.md"
printf '# Missing file\n\nA [repository file that does not exist](../no-such-file.rs).\n' >"$scratch/docs/broken-file.md"
# shellcheck disable=SC2016 # the backquotes are markdown
printf '# Broken diagram\n\n```mermaid\nflowchart LR\n  a[unclosed --> b\n```\n' >"$scratch/docs/broken-diagram.md"
if (cd "$scratch/docs" && node_modules/.bin/rspress build >"$scratch/out" 2>&1); then
  echo "docs: a site with a dead link and a broken diagram built anyway" >&2
  exit 1
fi
for expected in 'no-such-page.md' 'no-such-file.rs' 'mermaid diagram at .*broken-diagram.md'; do
  grep -q "$expected" "$scratch/out" || { echo "docs: the failed build does not name '$expected':" >&2; tail -n 40 "$scratch/out" >&2; exit 1; }
done
echo "docs: a dead link, a missing repository file and a broken diagram each fail the build"
