import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bodyNamesUser, credentialsHeader, g1Headers, sign } from './g1.mjs';

const vectors = JSON.parse(readFileSync(new URL('../../testdata/g1-vectors.json', import.meta.url), 'utf8'));

describe('G1 signer', () => {
  it.each(vectors.vectors)('reproduces the vector for $uid at $ts', (v) => {
    const fields = { uid: v.uid, ts: v.ts, nonce: v.nonce, credentials: v.credentials };
    expect(sign(vectors.signing_secret, { ...fields, body: Buffer.from(v.body, 'utf8') })).toBe(v.signature);
    expect(sign(vectors.signing_secret, { ...fields, body: v.body })).toBe(v.signature);
  });

  it('builds every header, credentials included in the signature', () => {
    const v = vectors.vectors.find((x) => x.credentials === 'nextcloud=x');
    const h = g1Headers({ proxySecret: 'p', signingSecret: vectors.signing_secret, uid: v.uid, appPassword: 'x', body: v.body, requestId: 'r1', nonce: v.nonce, now: v.ts * 1000 + 999 });
    expect(h).toEqual({
      authorization: 'Bearer p', 'x-tamebi-uid': v.uid, 'x-tamebi-ts': String(v.ts), 'x-tamebi-nonce': v.nonce,
      'x-tamebi-signature': v.signature, 'x-tamebi-credentials': 'nextcloud=x', 'x-request-id': 'r1',
    });
  });

  it('sends a token only under the listed server names, and none without one', () => {
    expect(credentialsHeader(['nextcloud', 'mail'], 'pw')).toBe('nextcloud=pw, mail=pw');
    expect(credentialsHeader(['nextcloud'], '')).toBe('');
    const h = g1Headers({ proxySecret: 'p', signingSecret: 's', uid: 'a', appPassword: '', body: '' });
    expect(h).not.toHaveProperty('x-tamebi-credentials');
    const a = g1Headers({ proxySecret: 'p', signingSecret: 's', uid: 'a', appPassword: 'pw', body: '' });
    const b = g1Headers({ proxySecret: 'p', signingSecret: 's', uid: 'a', appPassword: 'pw', body: '' });
    expect(a['x-tamebi-nonce']).not.toBe(b['x-tamebi-nonce']);
  });

  it('spots a body that names a user', () => {
    for (const body of ['{"uid":"bob"}', '{"user":"bob","id":"c"}', '{"userId":1}']) expect(bodyNamesUser(Buffer.from(body))).toBe(true);
    for (const body of ['', '{"id":"c","messages":[{"user":"x"}]}', 'not json', '[{"uid":1}]']) expect(bodyNamesUser(Buffer.from(body))).toBe(false);
  });
});
