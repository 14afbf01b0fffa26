// The dev host against a real HTTP listener standing where the orchestrator would be: it
// records what arrives so the G1 headers, the uid refusal and the frame policy pass-through
// can be checked byte for byte.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES, createDevHost } from './server.mjs';
import { sign } from './g1.mjs';

let upstream; let upstreamUrl; let host; let base; const seen = [];
// The orchestrator's answers still open (held ones only): a forward the dev host did not stop.
const held = new Set();
// The orchestrator refuses (an error body with internals, cut short) and its connection drops
// while the dev host reads that body for its code.
function refuseAndDrop(res) {
  res.writeHead(503, { 'content-type': 'application/json', 'content-length': '400' });
  res.write('{"error":{"message":"panic at /srv/tamebi/src/secret.rs:42","co');
  setTimeout(() => res.socket.destroy(), 50);
}
const listen = (server) => new Promise((r) => server.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${server.address().port}`)));

beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.url.startsWith('/v1/conversations/hold-')) {
      // A turn still streaming (or an answer not begun): open until the dev host hangs up.
      held.add(res);
      res.on('close', () => held.delete(res));
      req.resume();
      if (req.url === '/v1/conversations/hold-stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"type":"start"}\n\n');
      }
      return;
    }
    if (req.url === '/v1/conversations/reset-unread') {
      // Refused before the request body was read, then the connection dropped: the unread body
      // makes it a reset, so the request fails too while the error body is being read.
      return refuseAndDrop(res);
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url.startsWith('/v1/apps/resource')) {
        const csp = req.url.includes('nopolicy') ? {} : { 'content-security-policy': "default-src 'none'; script-src 'sha256-x'" };
        res.writeHead(200, { 'content-type': 'text/html;profile=mcp-app', ...csp });
        return res.end('<p>app</p>');
      }
      const refusal = /^\/v1\/conversations\/refuse-([0-9]{3})-(.*)$/.exec(req.url);
      if (refusal) {
        // A refusal with a code (docs/api.md), and internals in the message the browser must never see.
        res.writeHead(Number(refusal[1]), { 'content-type': 'application/json', 'x-request-id': 'upstream-id' });
        return res.end(JSON.stringify({ error: { message: 'panic at /srv/tamebi/src/secret.rs:42', requestId: 'upstream-id', code: refusal[2] === 'hostile' ? '<img src=x onerror=alert(1)>' : refusal[2] } }));
      }
      if (req.url === '/v1/conversations/drop-stream') {
        // The orchestrator's connection lost mid-answer: headers and a frame, then nothing.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"type":"start"}\n\n');
        return setTimeout(() => res.socket.destroy(), 50);
      }
      if (req.url === '/v1/conversations/drop-error') {
        // The same while the dev host reads an error body for its code.
        return refuseAndDrop(res);
      }
      const failing = /^\/v1\/conversations\/(timeout|unreachable|busy)$/.exec(req.url);
      if (failing) {
        // Error bodies with internals in them, as the PHP app's tests' fake orchestrator sends.
        const status = { timeout: 504, unreachable: 502, busy: 503 }[failing[1]];
        res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'upstream-id', 'retry-after': status === 503 ? '2' : 'Wed, 21 Oct 2026 07:28:00 GMT <script>' });
        return res.end(JSON.stringify({ error: { message: 'panic at /srv/tamebi/src/secret.rs:42', requestId: 'upstream-id' } }));
      }
      if (/^\/v1\/chat\/[^/]+\/stop$/.test(req.url)) {
        res.writeHead(204);
        return res.end();
      }
      if (req.url.split('?')[0] === '/v1/chat') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1', 'x-internal': 'secret' });
        res.write('data: {"type":"start"}\n\n');
        return setImmediate(() => res.end('data: [DONE]\n\n'));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"conversations":[]}');
    });
  });
  const up = await listen(upstream);
  upstreamUrl = up;
  host = createDevHost({ orchestratorUrl: up, proxySecret: 'proxy', signingSecret: 'sign', users: new Map([['alice', 'pw-a'], ['bob', 'pw-b']]), ncUrl: '', credentialServers: ['nextcloud'], dist: '/nonexistent' });
  base = await listen(host);
});
afterAll(() => { host.close(); upstream.close(); });

/** Runs `body`; no promise of the dev host may be left rejected unhandled by it. */
async function withoutUnhandledRejections(body) {
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    await body();
    // A rejection is reported after the microtasks of its turn: give it a moment to surface.
    await new Promise((r) => setTimeout(r, 50));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
}

async function login(user) {
  const r = await fetch(`${base}/apps/tamebi/?as=${user}`, { redirect: 'manual' });
  const cookie = r.headers.get('set-cookie').split(';')[0];
  const page = await (await fetch(`${base}/apps/tamebi/`, { headers: { cookie } })).text();
  const token = /data-requesttoken="([^"]+)"/.exec(page)[1];
  return { cookie, token, page };
}

describe('dev host', () => {
  it('renders the page with initial state and a CSRF token', async () => {
    const { page } = await login('alice');
    const state = JSON.parse(Buffer.from(/initial-state-tamebi-tamebi-config" value="([^"]+)"/.exec(page)[1], 'base64').toString());
    expect(state).toMatchObject({ apiBase: '/apps/tamebi/api', frameUrl: '/apps/tamebi/frame', user: { uid: 'alice' }, workspaceConnected: true });
  });

  it('emulates Nextcloud\'s theme on <body>, only with a theme id Nextcloud has', async () => {
    const { cookie, page } = await login('alice');
    expect(page).toContain('<body data-theme-default data-themes="default">');
    const dark = await (await fetch(`${base}/apps/tamebi/?theme=dark`, { headers: { cookie } })).text();
    expect(dark).toContain('<body data-theme-dark data-themes="dark">');
    const odd = await (await fetch(`${base}/apps/tamebi/?theme=%22%3E%3Cscript%3E`, { headers: { cookie } })).text();
    expect(odd).toContain('<body data-theme-default data-themes="default">');
    const css = await fetch(`${base}/island/nextcloud-theme.css`);
    expect(css.status).toBe(200);
    expect(await css.text()).toContain('body[data-theme-dark-highcontrast]');
  });

  it('emulates another app\'s page with a composer and the Smart Picker, under the same policy', async () => {
    const { cookie } = await login('alice');
    const r = await fetch(`${base}/composer?app=mail`, { headers: { cookie } });
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    const page = await r.text();
    expect(page).toContain('<main id="content" class="app-mail">');
    expect(page).toContain('<script src="/island/smart-picker.js" defer></script>');
    expect(page).toContain('id="initial-state-tamebi-tamebi-config"');
    expect(page).not.toContain('id="tamebi-island"');
    expect(page).toContain('&#34;id&#34;:&#34;tamebi&#34;,&#34;title&#34;:&#34;Ask Tamebi&#34;');
    // Only the apps it knows; anything else is Talk's page.
    const odd = await (await fetch(`${base}/composer?app=%22%3E%3Cscript%3E`, { headers: { cookie } })).text();
    expect(odd).toContain('<main id="content" class="app-spreed">');
    expect((await fetch(`${base}/composer`, { redirect: 'manual' })).status).toBe(303);
    expect((await fetch(`${base}/island/smart-picker.js`)).status).toBe(200);
  });

  it('forwards chat with G1 headers and streams SSE through', async () => {
    const { cookie, token } = await login('bob');
    const body = '{"id":"c1","messages":[]}';
    const r = await fetch(`${base}/apps/tamebi/api/chat`, { method: 'POST', headers: { cookie, requesttoken: token, 'content-type': 'application/json' }, body });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(r.headers.get('x-internal')).toBeNull();
    expect(await r.text()).toBe('data: {"type":"start"}\n\ndata: [DONE]\n\n');
    const got = seen.at(-1);
    // The person's language rides along, signed with the query (issue #34).
    expect(got.url).toBe('/v1/chat?lang=en');
    expect(got.body).toBe(body);
    expect(got.headers.authorization).toBe('Bearer proxy');
    expect(got.headers['x-tamebi-uid']).toBe('bob');
    expect(got.headers['x-tamebi-credentials']).toBe('nextcloud=pw-b');
    expect(got.headers['x-tamebi-nc-authorization']).toBeUndefined();
    expect(got.headers['x-tamebi-nonce']).toMatch(/^[0-9a-f-]{36}$/);
    const signed = { method: 'POST', path: '/v1/chat', query: 'lang=en', uid: 'bob', ts: Number(got.headers['x-tamebi-ts']), nonce: got.headers['x-tamebi-nonce'], credentials: 'nextcloud=pw-b' };
    expect(got.headers['x-tamebi-signature']).toBe(sign('sign', { ...signed, body }));
    // Issue #27: signed for this method and path only.
    expect(got.headers['x-tamebi-signature']).not.toBe(sign('sign', { ...signed, path: '/v1/apps/tools/dispatch', body }));
    expect(got.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('rewrites every error body by status as the PHP app does: its fixed text, its request id, Retry-After kept', async () => {
    const { cookie, token } = await login('alice');
    const told = {};
    for (const id of ['timeout', 'unreachable', 'busy']) {
      const r = await fetch(`${base}/apps/tamebi/api/conversations/${id}`, { headers: { cookie, requesttoken: token } });
      const body = await r.json();
      expect(body.error.requestId).toBe(r.headers.get('x-request-id'));
      expect(body.error.requestId).not.toBe('upstream-id');
      told[id] = [r.status, body.error.message, r.headers.get('retry-after'), body.error.retryAfter ?? null];
    }
    expect(told).toEqual({
      timeout: [504, 'No answer came in time. It is not known whether anything was done: check before trying again.', null, null],
      unreachable: [502, 'A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.', null, null],
      busy: [503, 'Something went wrong. Please try again.', '2', 2],
    });
  });

  it('shows its own text for a refusal code it knows, with its status, and passes the code on', async () => {
    const { cookie, token } = await login('alice');
    const told = {};
    for (const id of ['refuse-409-message_id_taken', 'refuse-400-approvals_undecided', 'refuse-429-too_fast',
      'refuse-409-some_new_kind', 'refuse-500-message_id_taken', 'refuse-409-hostile']) {
      const r = await fetch(`${base}/apps/tamebi/api/conversations/${id}`, { headers: { cookie, requesttoken: token } });
      const text = await r.text();
      expect(text).not.toContain('secret.rs');
      expect(text).not.toContain('onerror');
      const { error } = JSON.parse(text);
      expect(error.requestId).toBe(r.headers.get('x-request-id'));
      told[id] = [r.status, error.message, error.code ?? null];
    }
    expect(told).toEqual({
      'refuse-409-message_id_taken': [409, 'Another message of this conversation already has this id. Send the message under a new id.', 'message_id_taken'],
      'refuse-400-approvals_undecided': [400, 'Decide every approval this reply asked for, then send them together.', 'approvals_undecided'],
      'refuse-429-too_fast': [429, 'You are sending messages faster than allowed. Wait a moment, then send again.', 'too_fast'],
      // Unknown, under another status, or anything else: the status text and no code.
      'refuse-409-some_new_kind': [409, 'A reply is already being written in this conversation.', null],
      'refuse-500-message_id_taken': [500, 'Something went wrong. Please try again.', null],
      'refuse-409-hostile': [409, 'A reply is already being written in this conversation.', null],
    });
  });

  it('ends the browser\'s answer when the orchestrator\'s connection is lost, and answers once', async () => {
    const { cookie, token } = await login('alice');
    await withoutUnhandledRejections(async () => {
      const streamed = await fetch(`${base}/apps/tamebi/api/conversations/drop-stream`, { headers: { cookie, requesttoken: token } });
      expect(streamed.status).toBe(200);
      // Cut, not hanging: the body ends in an error rather than never.
      await expect(streamed.text()).rejects.toThrow();
      const refused = await fetch(`${base}/apps/tamebi/api/conversations/drop-error`, { headers: { cookie, requesttoken: token } });
      expect(refused.status).toBe(503);
      const text = await refused.text();
      expect(text).not.toContain('secret.rs');
      expect(JSON.parse(text).error.message).toBe('Something went wrong. Please try again.');
      // The host still serves.
      const after = await fetch(`${base}/apps/tamebi/api/conversations`, { headers: { cookie, requesttoken: token } });
      expect(after.status).toBe(200);
    });
  });

  it('answers once when the orchestrator refuses, then both its answer and the request fail', async () => {
    const { cookie, token } = await login('alice');
    await withoutUnhandledRejections(async () => {
      // Large enough that the orchestrator's side cannot have read it all when it hangs up.
      const body = JSON.stringify({ pad: 'a'.repeat(900 * 1024) });
      const r = await fetch(`${base}/apps/tamebi/api/conversations/reset-unread`, { method: 'DELETE', headers: { cookie, requesttoken: token }, body });
      // Whichever failure came first answered (the request's 502 or the refusal's 503), once.
      const texts = {
        502: 'A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.',
        503: 'Something went wrong. Please try again.',
      };
      expect(JSON.parse(await r.text()).error.message).toBe(texts[r.status]);
      expect((await fetch(`${base}/apps/tamebi/api/conversations`, { headers: { cookie, requesttoken: token } })).status).toBe(200);
    });
  });

  it('stops the orchestrator\'s request when the browser goes away, mid-stream or before the answer', async () => {
    const { cookie, token } = await login('alice');
    const headers = { cookie, requesttoken: token };
    const streaming = new AbortController();
    const r = await fetch(`${base}/apps/tamebi/api/conversations/hold-stream`, { headers, signal: streaming.signal });
    expect(r.status).toBe(200);
    await r.body.getReader().read();
    expect(held.size).toBe(1);
    streaming.abort();
    await expect.poll(() => held.size, { timeout: 3000 }).toBe(0);
    const waiting = new AbortController();
    const pending = fetch(`${base}/apps/tamebi/api/conversations/hold-head`, { headers, signal: waiting.signal }).catch(() => null);
    await expect.poll(() => held.size, { timeout: 3000 }).toBe(1);
    waiting.abort();
    await pending;
    await expect.poll(() => held.size, { timeout: 3000 }).toBe(0);
  });

  it('knows each refusal code with the status and text docs/api.md gives it', () => {
    // docs/api.md's Errors table, the one source of the codes: | <status> (...) | `<code>` | `<message>` ... |
    const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const documented = new Map();
    for (const [, status, code, text] of api.matchAll(/^\| ([0-9]{3})\b[^|\n]*\| `([a-z_]+)` \| `([^`\n]+)`/gm)) {
      documented.set(code, [Number(status), text]);
    }
    expect(documented.has('too_fast'), 'docs/api.md\'s Errors table was not found').toBe(true);
    expect(CODES.size).toBeGreaterThan(0);
    for (const [code, entry] of CODES) {
      expect(entry, `our ${code} differs from docs/api.md's row`).toEqual(documented.get(code));
    }
  });

  it('refuses a body naming a uid with 400 and forwards nothing', async () => {
    const { cookie, token } = await login('alice');
    const before = seen.length;
    const r = await fetch(`${base}/apps/tamebi/api/chat`, { method: 'POST', headers: { cookie, requesttoken: token }, body: '{"id":"c1","uid":"bob","messages":[]}' });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: { message: 'The request was not understood.' } });
    expect(seen.length).toBe(before);
  });

  it('refuses calls without login or CSRF token', async () => {
    const { cookie } = await login('alice');
    expect((await fetch(`${base}/apps/tamebi/api/conversations`)).status).toBe(401);
    expect((await fetch(`${base}/apps/tamebi/api/conversations`, { headers: { cookie, requesttoken: 'wrong' } })).status).toBe(401);
  });

  it('signs GET with the empty body and maps ids', async () => {
    const { cookie, token } = await login('alice');
    const r = await fetch(`${base}/apps/tamebi/api/conversations/abc_1`, { headers: { cookie, requesttoken: token } });
    expect(r.status).toBe(200);
    const got = seen.at(-1);
    expect(got.url).toBe('/v1/conversations/abc_1');
    const signed = { method: 'GET', path: '/v1/conversations/abc_1', uid: 'alice', ts: Number(got.headers['x-tamebi-ts']), nonce: got.headers['x-tamebi-nonce'], credentials: 'nextcloud=pw-a' };
    expect(got.headers['x-tamebi-signature']).toBe(sign('sign', { ...signed, body: '' }));
    expect(got.headers['x-tamebi-signature']).not.toBe(sign('sign', { ...signed, method: 'DELETE', body: '' }));
    expect((await fetch(`${base}/apps/tamebi/api/conversations/a.b`, { headers: { cookie, requesttoken: token } })).status).toBe(400);
    expect((await fetch(`${base}/apps/tamebi/api/chat`, { headers: { cookie, requesttoken: token } })).status).toBe(405);
  });

  it('forwards Stop as a signed POST with the empty body, for the conversation\'s id only', async () => {
    const { cookie, token } = await login('alice');
    const r = await fetch(`${base}/apps/tamebi/api/chat/abc_1/stop`, { method: 'POST', headers: { cookie, requesttoken: token } });
    expect(r.status).toBe(204);
    const got = seen.at(-1);
    expect(got.url).toBe('/v1/chat/abc_1/stop');
    expect(got.method).toBe('POST');
    const signed = { method: 'POST', path: '/v1/chat/abc_1/stop', uid: 'alice', ts: Number(got.headers['x-tamebi-ts']), nonce: got.headers['x-tamebi-nonce'], credentials: 'nextcloud=pw-a' };
    expect(got.headers['x-tamebi-signature']).toBe(sign('sign', { ...signed, body: '' }));
    const sent = seen.length;
    expect((await fetch(`${base}/apps/tamebi/api/chat/a.b/stop`, { method: 'POST', headers: { cookie, requesttoken: token } })).status).toBe(400);
    expect((await fetch(`${base}/apps/tamebi/api/chat/abc_1/stop`, { headers: { cookie, requesttoken: token } })).status).toBe(405);
    expect((await fetch(`${base}/apps/tamebi/api/chat/abc_1/stop`, { method: 'POST', headers: { cookie } })).status).toBe(401);
    expect(seen.length).toBe(sent);
  });

  it('serves a frame with exactly the orchestrator\'s policy, and none without one', async () => {
    const { cookie } = await login('alice');
    const r = await fetch(`${base}/apps/tamebi/frame?server=nextcloud&uri=${encodeURIComponent('ui://nextcloud/calendar-week')}&conversation=c_1`, { headers: { cookie } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; script-src 'sha256-x'");
    expect(await r.text()).toBe('<p>app</p>');
    const frame = seen.at(-1);
    expect(frame.url).toBe('/v1/apps/resource?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Fcalendar-week&conversation=c_1');
    // The raw query as it arrived is inside the signature (issue #27).
    const fields = { method: 'GET', path: '/v1/apps/resource', uid: 'alice', ts: Number(frame.headers['x-tamebi-ts']), nonce: frame.headers['x-tamebi-nonce'], credentials: 'nextcloud=pw-a', body: '' };
    expect(frame.headers['x-tamebi-signature']).toBe(sign('sign', { ...fields, query: 'server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Fcalendar-week&conversation=c_1' }));
    expect((await fetch(`${base}/apps/tamebi/frame?server=nextcloud&uri=ui://x&conversation=../c`, { headers: { cookie } })).status).toBe(400);
    const bare = await fetch(`${base}/apps/tamebi/frame?server=nextcloud&uri=ui://nopolicy`, { headers: { cookie } });
    expect(bare.status).toBe(502);
    expect(bare.headers.get('content-security-policy')).toBeNull();
    expect((await fetch(`${base}/apps/tamebi/frame?server=nextcloud&uri=https://evil`, { headers: { cookie } })).status).toBe(400);
  });

  it('renders the page in the person\'s Nextcloud language, as the stand-in\'s cloud/user says, and answers in it', async () => {
    // A stand-in whose bob set German (core/lang de, core/locale de_DE); alice kept English.
    const asked = [];
    const standin = createServer((req, res) => {
      asked.push([req.url, req.headers.authorization, req.headers['ocs-apirequest']]);
      const uid = Buffer.from((req.headers.authorization ?? '').slice(6), 'base64').toString().split(':')[0];
      const data = uid === 'bob' ? { id: 'bob', language: 'de', locale: 'de_DE' } : { id: uid, language: 'en', locale: '' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ocs: { meta: { status: 'ok' }, data } }));
    });
    const nc = await listen(standin);
    const l10nDir = new URL('../../nextcloud-app/l10n/', import.meta.url).pathname;
    const german = createDevHost({ orchestratorUrl: upstreamUrl, proxySecret: 'proxy', signingSecret: 'sign', users: new Map([['alice', 'pw-a'], ['bob', 'pw-b']]), ncUrl: nc, credentialServers: ['nextcloud'], dist: '/nonexistent', l10nDir, language: null, locale: null, timeZone: 'Europe/Berlin' });
    const at = await listen(german);
    try {
      const r = await fetch(`${at}/apps/tamebi/?as=bob`, { redirect: 'manual' });
      const cookie = r.headers.get('set-cookie').split(';')[0];
      const page = await (await fetch(`${at}/apps/tamebi/`, { headers: { cookie } })).text();
      expect(page).toContain('<html lang="de" data-locale="de_DE">');
      expect(page).toContain('<script src="/core/l10n.js"></script>\n<script src="/apps/tamebi/l10n/de.js"></script>\n<script src="/island/tamebi-island.js" defer></script>');
      const state = JSON.parse(Buffer.from(/initial-state-tamebi-tamebi-config" value="([^"]+)"/.exec(page)[1], 'base64').toString());
      expect(state.timeZone).toBe('Europe/Berlin');
      expect(asked[0]).toEqual(['/ocs/v2.php/cloud/user', `Basic ${Buffer.from('bob:pw-b').toString('base64')}`, 'true']);
      // Core's part: firstDay from the locale (Monday in Germany), OC.L10N.register into the registry.
      const core = await (await fetch(`${at}/core/l10n.js`, { headers: { cookie } })).text();
      expect(core).toContain('window.firstDay = 1;');
      const registry = {};
      new Function('window', 'globalThis', core)(registry, registry);
      new Function('OC', await (await fetch(`${at}/apps/tamebi/l10n/de.js`)).text())(registry.OC);
      expect(registry._oc_l10n_registry_translations.tamebi.Approve).toBe('Genehmigen');
      expect(registry._oc_l10n_registry_plural_functions.tamebi(2)).toBe(1);
      expect((await fetch(`${at}/apps/tamebi/l10n/..%2Fsecret.js`)).status).toBe(404);
      // Errors in German, and a chat turn tells the orchestrator the language.
      const token = /data-requesttoken="([^"]+)"/.exec(page)[1];
      const e = await (await fetch(`${at}/apps/tamebi/api/conversations/timeout`, { headers: { cookie, requesttoken: token } })).json();
      expect(e.error.message).toBe('Es kam nicht rechtzeitig eine Antwort. Es ist nicht bekannt, ob etwas ausgeführt wurde: prüfe das, bevor du es erneut versuchst.');
      await (await fetch(`${at}/apps/tamebi/api/chat`, { method: 'POST', headers: { cookie, requesttoken: token, 'content-type': 'application/json' }, body: '{"id":"c1","messages":[]}' })).text();
      expect(seen.at(-1).url).toBe('/v1/chat?lang=de');
      // alice kept English: no bundle, English texts.
      const a = await fetch(`${at}/apps/tamebi/?as=alice`, { redirect: 'manual' });
      const alice = await (await fetch(`${at}/apps/tamebi/`, { headers: { cookie: a.headers.get('set-cookie').split(';')[0] } })).text();
      expect(alice).toContain('<html lang="en" data-locale="en">');
      expect(alice).not.toContain('/l10n/');
    } finally {
      german.close();
      standin.close();
    }
  });
});
