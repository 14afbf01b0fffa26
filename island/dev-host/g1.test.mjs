import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bodyNamesUser, g1Headers, sign } from './g1.mjs';

const vectors = JSON.parse(readFileSync(new URL('../../testdata/g1-vectors.json', import.meta.url), 'utf8'));

describe('G1 signer', () => {
  it.each(vectors.vectors)('reproduces the vector for $uid at $ts', (v) => {
    expect(sign(vectors.signing_secret, v.uid, v.ts, Buffer.from(v.body, 'utf8'))).toBe(v.signature);
    expect(sign(vectors.signing_secret, v.uid, v.ts, v.body)).toBe(v.signature);
  });

  it('builds every header', () => {
    const v = vectors.vectors[0];
    const h = g1Headers({ proxySecret: 'p', signingSecret: vectors.signing_secret, uid: v.uid, appPassword: 'app-pw', body: v.body, requestId: 'r1', now: v.ts * 1000 + 999 });
    expect(h).toEqual({
      authorization: 'Bearer p', 'x-tamebi-uid': v.uid, 'x-tamebi-ts': String(v.ts), 'x-tamebi-signature': v.signature,
      'x-tamebi-nc-authorization': 'Bearer app-pw', 'x-request-id': 'r1',
    });
  });

  it('spots a body that names a user', () => {
    for (const body of ['{"uid":"bob"}', '{"user":"bob","id":"c"}', '{"userId":1}']) expect(bodyNamesUser(Buffer.from(body))).toBe(true);
    for (const body of ['', '{"id":"c","messages":[{"user":"x"}]}', 'not json', '[{"uid":1}]']) expect(bodyNamesUser(Buffer.from(body))).toBe(false);
  });
});
