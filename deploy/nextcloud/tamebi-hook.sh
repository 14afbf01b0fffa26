#!/bin/sh
# Nextcloud's side of the Tamebi stack, run by the official image's hook folders as www-data:
#   /docker-entrypoint-hooks.d/post-installation/  right after the first `occ maintenance:install`
#   /docker-entrypoint-hooks.d/before-starting/    on every start (the same script; idempotent)
# It installs and enables the oidc, user_oidc, deck and mail apps and our tamebi app, lets user_oidc
# accept Nextcloud's own tokens as Bearer, runs `occ tamebi:setup`, and writes the two secrets the
# orchestrator needs to $TAMEBI_SECRETS_FILE (mode 0640, a volume only the orchestrator shares).
# A secret never reaches stdout or stderr, so never the container log.
#
#   tamebi-hook.sh                   converge (what the image runs)
#   tamebi-hook.sh --rotate-secrets  also replace both secrets (then restart the orchestrator)
#
# Needs: TAMEBI_ORCHESTRATOR_URL, TAMEBI_MCP_URL, TAMEBI_SECRETS_FILE; optional TAMEBI_INTERNAL_URL and
# TAMEBI_MAIL_MCP_URL (mcp-mail's URL: users then also get a token of mcp-mail's audience).
# TAMEBI_OCC replaces `php /var/www/html/occ` (the CI test runs the hook against a recording occ).
# Every occ command below is checked against its source by scripts/test.d/60-deploy.sh.
set -eu

rotate=
case "${1:-}" in
  "") ;;
  --rotate-secrets) rotate=--rotate-secrets ;;
  *) echo "usage: $0 [--rotate-secrets]" >&2; exit 2 ;;
esac

: "${TAMEBI_ORCHESTRATOR_URL:?set TAMEBI_ORCHESTRATOR_URL (where Nextcloud reaches the orchestrator)}"
: "${TAMEBI_MCP_URL:?set TAMEBI_MCP_URL (the MCP URL tokens are issued for)}"
: "${TAMEBI_SECRETS_FILE:?set TAMEBI_SECRETS_FILE (the file the orchestrator reads its secrets from)}"
OCC=${TAMEBI_OCC:-php /var/www/html/occ}

log() { echo "tamebi-hook: $*"; }

# A new image of ours brings a new app version; Nextcloud serves nothing until its upgrade
# routine has run ("already latest version" and exit 0 when there is nothing to do).
$OCC upgrade

# Apps from the app store (the newest release compatible with this Nextcloud) and ours from
# custom_apps. `app:enable` downloads an app that is missing and says "already enabled" otherwise.
for app in oidc user_oidc deck mail tamebi; do
  $OCC app:enable "$app"
done

# user_oidc reads this from the *system* config and compares it with === true (lib/User/Backend.php).
$OCC config:system:set user_oidc oidc_provider_bearer_validation --value=true --type=boolean

# The token flow is a loopback call from Nextcloud to itself: inside the container that is Apache
# on port 80, whatever the public URL is.
if [ -n "${TAMEBI_INTERNAL_URL:-}" ]; then
  $OCC config:app:set tamebi internal_url --value="$TAMEBI_INTERNAL_URL"
fi

# A second Nextcloud-facing MCP server gets tokens of its own audience (never mcp-nextcloud's):
# the app reads them from its mcp_audiences setting, server name -> URL.
if [ -n "${TAMEBI_MAIL_MCP_URL:-}" ]; then
  case "$TAMEBI_MAIL_MCP_URL" in
    *\"*|*\\*) echo "tamebi-hook: TAMEBI_MAIL_MCP_URL must not contain quotes or backslashes" >&2; exit 2 ;;
  esac
  $OCC config:app:set tamebi mcp_audiences --value="{\"mail\":\"$TAMEBI_MAIL_MCP_URL\"}"
fi

# tamebi:setup prints the two secret lines; they go to the secrets file and nowhere else.
umask 027
tmp="$TAMEBI_SECRETS_FILE.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# shellcheck disable=SC2086 # $rotate is empty or one flag
$OCC tamebi:setup --orchestrator-url="$TAMEBI_ORCHESTRATOR_URL" --mcp-url="$TAMEBI_MCP_URL" $rotate \
  | awk -v secrets="$tmp" '/^TAMEBI_(PROXY|SIGNING)_SECRET=/ { print > secrets; next } { print "tamebi-hook: " $0 }'
if [ "$(grep -c '^TAMEBI_' "$tmp" 2>/dev/null || true)" != 2 ]; then
  log "occ tamebi:setup did not print both secrets; the orchestrator keeps its old ones" >&2
  exit 1
fi
chmod 0640 "$tmp"
mv "$tmp" "$TAMEBI_SECRETS_FILE"
trap - EXIT
log "secrets written to $TAMEBI_SECRETS_FILE${rotate:+ (rotated: restart the orchestrator)}"
