import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bodyNamesUser, credentialsHeader, g1Headers, sign, signAdmin, target } from './g1.mjs';

const vectors = JSON.parse(readFileSync(new URL('../../testdata/g1-vectors.json', import.meta.url), 'utf8'));

describe('G1 signer', () => {
  const url = (v) => new URL(`${v.path}${v.query === '' ? '' : `?${v.query}`}`, 'http://127.0.0.1:8700');

  it.each(vectors.vectors)('reproduces the vector for $method $path as $uid', (v) => {
    const fields = { method: v.method, path: v.path, query: v.query, uid: v.uid, ts: v.ts, nonce: v.nonce, credentials: v.credentials };
    expect(sign(vectors.signing_secret, { ...fields, body: Buffer.from(v.body, 'utf8') })).toBe(v.signature);
    expect(sign(vectors.signing_secret, { ...fields, body: v.body })).toBe(v.signature);
    // The URL the dev host sends to carries exactly that path and query.
    expect(target(url(v))).toEqual({ path: v.path, query: v.query });
  });

  it.each(vectors.admin_vectors)('reproduces the admin vector for $method $path as $uid', (v) => {
    expect(signAdmin(vectors.signing_secret, { method: v.method, path: v.path, query: v.query, uid: v.uid, ts: v.ts, nonce: v.nonce })).toBe(v.signature);
    const h = g1Headers({ proxySecret: 'p', signingSecret: vectors.signing_secret, method: v.method, url: url(v), uid: v.uid, servers: [], body: '', nonce: v.nonce, now: v.ts * 1000, admin: true });
    expect(h['x-tamebi-admin-signature']).toBe(v.signature);
    expect(g1Headers({ proxySecret: 'p', signingSecret: 's', method: 'GET', url: url(v), uid: v.uid, body: '' })).not.toHaveProperty('x-tamebi-admin-signature');
  });

  it('builds every header, credentials and target included in the signature', () => {
    const v = vectors.vectors.find((x) => x.credentials === 'nextcloud=tok-123' && x.method === 'GET');
    const h = g1Headers({ proxySecret: 'p', signingSecret: vectors.signing_secret, method: v.method, url: url(v), uid: v.uid, appPassword: 'tok-123', body: v.body, requestId: 'r1', nonce: v.nonce, now: v.ts * 1000 + 999 });
    expect(h).toEqual({
      authorization: 'Bearer p', 'x-tamebi-uid': v.uid, 'x-tamebi-ts': String(v.ts), 'x-tamebi-nonce': v.nonce,
      'x-tamebi-signature': v.signature, 'x-tamebi-credentials': 'nextcloud=tok-123', 'x-request-id': 'r1',
    });
  });

  it('signs the method, path and raw query: the same request elsewhere is another signature (issue #27)', () => {
    const base = { method: 'GET', path: '/v1/conversations', query: '', uid: 'alice', ts: 1, nonce: 'n0000000000000000', body: '', credentials: '' };
    const ref = sign('k', base);
    for (const change of [{ method: 'DELETE' }, { path: '/v1/me/data' }, { path: '/v1/conversations/c1' }, { query: 'a=1' }]) {
      expect(sign('k', { ...base, ...change })).not.toBe(ref);
    }
    expect(target(new URL('http://o/v1/apps/resource?b=2&a=1'))).toEqual({ path: '/v1/apps/resource', query: 'b=2&a=1' });
    expect(target(new URL('http://o/v1/conversations'))).toEqual({ path: '/v1/conversations', query: '' });
  });

  it('sends a token only under the listed server names, and none without one', () => {
    expect(credentialsHeader(['nextcloud', 'mail'], 'pw')).toBe('nextcloud=pw, mail=pw');
    expect(credentialsHeader(['nextcloud'], '')).toBe('');
    const at = { method: 'GET', url: new URL('http://o/v1/conversations') };
    const h = g1Headers({ proxySecret: 'p', signingSecret: 's', ...at, uid: 'a', appPassword: '', body: '' });
    expect(h).not.toHaveProperty('x-tamebi-credentials');
    const a = g1Headers({ proxySecret: 'p', signingSecret: 's', ...at, uid: 'a', appPassword: 'pw', body: '' });
    const b = g1Headers({ proxySecret: 'p', signingSecret: 's', ...at, uid: 'a', appPassword: 'pw', body: '' });
    expect(a['x-tamebi-nonce']).not.toBe(b['x-tamebi-nonce']);
  });

  it('spots a body that names a user', () => {
    for (const body of ['{"uid":"bob"}', '{"user":"bob","id":"c"}', '{"userId":1}']) expect(bodyNamesUser(Buffer.from(body))).toBe(true);
    for (const body of ['', '{"id":"c","messages":[{"user":"x"}]}', 'not json', '[{"uid":1}]']) expect(bodyNamesUser(Buffer.from(body))).toBe(false);
  });
});
