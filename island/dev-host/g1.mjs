// G1 signer for the dev host: the same headers the Nextcloud app sends (docs/api.md).
//
// Owns: X-Tamebi-Signature = lowercase hex HMAC-SHA256(signing secret,
// METHOD + "\n" + path + "\n" + query + "\n" + uid + "\n" + ts + "\n" + nonce + "\n"
//   + hex(sha256(raw body)) + "\n" + hex(sha256(credentials))),
// where path and query are the URL's exactly as sent (the query without its "?", "" when none),
// and credentials is the exact X-Tamebi-Credentials value ("" when none); and the other G1 headers.
// Must never: sign a uid that did not come from the dev host's own login cookie, or send a
// user's credential under a server name the operator did not list.
import { createHash, createHmac, randomUUID } from 'node:crypto';

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

/** Signs one request. `body` is the exact bytes sent (a Buffer or a string, UTF-8). */
export function sign(signingSecret, { method, path, query = '', uid, ts, nonce, body, credentials = '' }) {
  return createHmac('sha256', signingSecret)
    .update(`${method}\n${path}\n${query}\n${uid}\n${ts}\n${nonce}\n${sha256(body)}\n${sha256(credentials)}`, 'utf8')
    .digest('hex');
}

/** The path and raw query a URL object is sent with (node's http.request sends pathname + search). */
export function target(url) {
  return { path: url.pathname, query: url.search.startsWith('?') ? url.search.slice(1) : '' };
}

/** `name=token, name=token`: the user's token for each listed MCP server. */
export function credentialsHeader(servers, token) {
  return token ? servers.map((name) => `${name}=${token}`).join(', ') : '';
}

/** The admin signature (docs/api.md, "Admin status"): the same request under its own purpose
 *  string, so no user signature can stand in for it. */
export function signAdmin(signingSecret, { method, path, query = '', uid, ts, nonce }) {
  return createHmac('sha256', signingSecret).update(`tamebi-admin-v2\n${method}\n${path}\n${query}\n${uid}\n${ts}\n${nonce}`, 'utf8').digest('hex');
}

/** Every G1 header for one forwarded request of `method` to `url` (a URL object, as sent);
 *  with `admin`, the admin signature too (only ever for a uid the caller knows is an admin). */
export function g1Headers({ proxySecret, signingSecret, method, url, uid, appPassword, servers = ['nextcloud'], body, requestId, nonce = randomUUID(), now = Date.now(), admin = false }) {
  const ts = Math.floor(now / 1000);
  const credentials = credentialsHeader(servers, appPassword);
  const headers = {
    authorization: `Bearer ${proxySecret}`,
    'x-tamebi-uid': uid,
    'x-tamebi-ts': String(ts),
    'x-tamebi-nonce': nonce,
    'x-tamebi-signature': sign(signingSecret, { method, ...target(url), uid, ts, nonce, body, credentials }),
    'x-request-id': requestId ?? randomUUID(),
  };
  if (credentials) headers['x-tamebi-credentials'] = credentials;
  if (admin) headers['x-tamebi-admin-signature'] = signAdmin(signingSecret, { method, ...target(url), uid, ts, nonce });
  return headers;
}

/** G1: a body naming a user is an attempt to choose one; refused, not ignored. */
export function bodyNamesUser(body) {
  if (body.length === 0) return false;
  let parsed;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) &&
    ['uid', 'user', 'userId'].some((key) => Object.hasOwn(parsed, key));
}
