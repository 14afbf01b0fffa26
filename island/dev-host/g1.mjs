// G1 signer for the dev host: the same headers the Nextcloud app sends (docs/api.md).
//
// Owns: X-Tamebi-Signature = lowercase hex HMAC-SHA256(signing secret,
// uid + "\n" + ts + "\n" + hex(sha256(raw body))), and the other G1 headers.
// Must never: sign a uid that did not come from the dev host's own login cookie.
import { createHash, createHmac, randomUUID } from 'node:crypto';

/** Signs one request. `body` is the exact bytes sent (a Buffer or a string, UTF-8). */
export function sign(signingSecret, uid, ts, body) {
  const bodyHash = createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', signingSecret).update(`${uid}\n${ts}\n${bodyHash}`, 'utf8').digest('hex');
}

/** Every G1 header for one forwarded request. */
export function g1Headers({ proxySecret, signingSecret, uid, appPassword, body, requestId, now = Date.now() }) {
  const ts = Math.floor(now / 1000);
  return {
    authorization: `Bearer ${proxySecret}`,
    'x-tamebi-uid': uid,
    'x-tamebi-ts': String(ts),
    'x-tamebi-signature': sign(signingSecret, uid, ts, body),
    'x-tamebi-nc-authorization': `Bearer ${appPassword}`,
    'x-request-id': requestId ?? randomUUID(),
  };
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
