// The dev host's configuration: one object, read from the environment once at startup.
//
// ORCHESTRATOR_URL       where `tamebi` listens, e.g. http://127.0.0.1:8700 (required)
// TAMEBI_PROXY_SECRET    the shared proxy bearer (required)
// TAMEBI_SIGNING_SECRET  the G1 signing secret (required)
// DEV_USERS              stand-in users and their Nextcloud app passwords: "alice:pw,bob:pw" (required)
// NC_URL                 the Nextcloud (or stand-in) base URL; links opened by apps point there (optional)
// DEV_CREDENTIAL_SERVERS MCP server names (as in TAMEBI_MCP_SERVERS, auth=nextcloud) that get the
//                        user's app password in X-Tamebi-Credentials, default "nextcloud"
// DEV_HOST_BIND          address to listen on, default 127.0.0.1:8080 (port 0 = any free port)
// DEV_HOST_DIST          the built island, default ../dist next to this file
// DEV_LANGUAGE           every user's Nextcloud language (de, de_DE, …) instead of what the stand-in's
//                        cloud/user says for them (optional; neither: en)
// DEV_LOCALE             their locale (de_DE, …); default: the stand-in's, else the language
// DEV_TIMEZONE           their time zone (an IANA name); default: the browser's
// DEV_HOST_L10N          the app's l10n/ folder, default ../../nextcloud-app/l10n next to this file
// DEV_ADMINS             uids of DEV_USERS who are Nextcloud admins: "root,admin" (optional; the admin
//                        settings page and the registry's admin OCS routes are theirs only)
// DEV_GROUPS             their Nextcloud groups, one uid:gid pair each: "alice:staff,bob:staff" (optional)

export class ConfigError extends Error {}

export function loadConfig(env) {
  const problems = [];
  const required = (name) => {
    const value = env[name];
    if (!value) problems.push(`${name} is required`);
    return value ?? '';
  };
  const orchestratorUrl = required('ORCHESTRATOR_URL').replace(/\/+$/, '');
  if (orchestratorUrl && !/^https?:\/\/[^/]+$/.test(orchestratorUrl)) problems.push('ORCHESTRATOR_URL must be http(s)://host:port');
  const proxySecret = required('TAMEBI_PROXY_SECRET');
  const signingSecret = required('TAMEBI_SIGNING_SECRET');
  const users = parseUsers(required('DEV_USERS'), problems);
  const ncUrl = (env.NC_URL ?? '').replace(/\/+$/, '');
  if (ncUrl && !/^https?:\/\/[A-Za-z0-9.\-]+(:\d+)?(\/[A-Za-z0-9._~\-/]*)?$/.test(ncUrl)) problems.push('NC_URL must be an http(s) URL');
  const credentialServers = (env.DEV_CREDENTIAL_SERVERS ?? 'nextcloud').split(',').map((s) => s.trim()).filter(Boolean);
  if (credentialServers.some((name) => !/^[A-Za-z0-9_-]{1,64}$/.test(name))) problems.push('DEV_CREDENTIAL_SERVERS must list server names of [A-Za-z0-9_-]');
  const bind = env.DEV_HOST_BIND ?? '127.0.0.1:8080';
  const match = /^(.+):(\d{1,5})$/.exec(bind);
  if (!match) problems.push('DEV_HOST_BIND must be HOST:PORT');
  const dist = env.DEV_HOST_DIST ?? new URL('../dist/', import.meta.url).pathname;
  const l10nDir = env.DEV_HOST_L10N ?? new URL('../../nextcloud-app/l10n/', import.meta.url).pathname;
  const language = env.DEV_LANGUAGE || null;
  if (language !== null && !NEXTCLOUD_LANGUAGE.test(language)) problems.push('DEV_LANGUAGE must be a Nextcloud language code like de or de_DE');
  const locale = env.DEV_LOCALE || null;
  if (locale !== null && !NEXTCLOUD_LANGUAGE.test(locale)) problems.push('DEV_LOCALE must be a Nextcloud locale code like de_DE');
  const timeZone = env.DEV_TIMEZONE || null;
  if (timeZone !== null && !knownZone(timeZone)) problems.push('DEV_TIMEZONE must be an IANA time zone like Europe/Berlin');
  const admins = new Set((env.DEV_ADMINS ?? '').split(',').map((s) => s.trim()).filter(Boolean));
  for (const uid of admins) if (!users.has(uid)) problems.push(`DEV_ADMINS names ${uid}, who is not in DEV_USERS`);
  const groups = parseGroups(env.DEV_GROUPS ?? '', users, problems);
  if (problems.length > 0) throw new ConfigError(`dev host configuration: ${problems.join('; ')}`);
  return { orchestratorUrl, proxySecret, signingSecret, users, ncUrl, credentialServers, host: match[1], port: Number(match[2]), dist, l10nDir, language, locale, timeZone, admins, groups };
}

/** A Nextcloud language or locale code as its settings hold them: de, de_DE, sr@latin, es_419. */
export const NEXTCLOUD_LANGUAGE = /^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?(@latin)?$/;

function knownZone(zone) {
  try {
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone === zone;
  } catch {
    return false;
  }
}

function parseGroups(value, users, problems) {
  const groups = new Map();
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [uid = '', gid = ''] = entry.split(':');
    // As the orchestrator accepts a group id: 1-255 characters, no control characters.
    if (!users.has(uid) || gid === '' || gid.length > 255 || /[\u0000-\u001f\u007f]/.test(gid)) {
      problems.push(`DEV_GROUPS entry "${entry.slice(0, 32)}" must be uid:group of a DEV_USERS uid`);
      continue;
    }
    groups.set(uid, [...(groups.get(uid) ?? []), gid]);
  }
  return groups;
}

function parseUsers(value, problems) {
  const users = new Map();
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const colon = entry.indexOf(':');
    const uid = colon > 0 ? entry.slice(0, colon) : '';
    const password = colon > 0 ? entry.slice(colon + 1) : '';
    // The password travels as a bearer token (RFC 6750 b64token) in X-Tamebi-Credentials.
    if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(uid) || !/^[A-Za-z0-9\-._~+/]+=*$/.test(password)) {
      problems.push(`DEV_USERS entry "${uid || entry.slice(0, 16)}" must be uid:app-password`);
      continue;
    }
    users.set(uid, password);
  }
  if (value && users.size === 0) problems.push('DEV_USERS names no user');
  return users;
}
