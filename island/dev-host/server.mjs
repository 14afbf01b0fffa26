// The dev host: plays the Nextcloud app's role in development and in browser tests.
//
// Owns: a stand-in login (a cookie naming one of DEV_USERS; `?as=bob` or the /login page),
// the island page (with Nextcloud's initial-state markup and CSRF token, Nextcloud's theme
// emulated: `?theme=dark` etc. marks <body> as Nextcloud's theming app does, with
// nextcloud-theme.css for its variables, and what Nextcloud does to a page for the person's
// language: `<html lang data-locale>`, `window.firstDay`, `OC.L10N.register` and the app's
// `l10n/<lang>.js`), and the same
// routes as the PHP app, each forwarded to the orchestrator's `/v1/...` twin with the G1
// headers (docs/api.md). SSE is streamed through unbuffered; a frame document is served with
// exactly the Content-Security-Policy the orchestrator built for it. The person's language is
// DEV_LANGUAGE, else what the stand-in's cloud/user says (their Nextcloud setting); their error
// texts are in it (the app's l10n/<lang>.json), and a chat turn carries it as `?lang=`.
//
// Must never: let a request choose its uid (G1: a body naming one is 400), serve a frame
// without the orchestrator's policy, or weaken that policy.
import { createServer, request as httpRequest } from 'node:http';
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bodyNamesUser, g1Headers } from './g1.mjs';
import { NEXTCLOUD_LANGUAGE } from './config.mjs';
import { groupQuery, handleOcs, OCS_PREFIX } from './ocs.mjs';

const MAX_BODY = 1024 * 1024;
/** Nextcloud's theme ids (apps/theming): `default` follows the OS setting, the others do not. */
export const THEMES = ['default', 'light', 'dark', 'light-highcontrast', 'dark-highcontrast'];
const COOKIE = 'tamebi_dev_user';
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const MESSAGES = {
  400: 'The request was not understood.',
  401: 'Not signed in.',
  403: 'This action is not allowed.',
  404: 'Not found.',
  409: 'A reply is already being written in this conversation.',
  413: 'The request is too large.',
  429: 'Too many requests. Please wait a moment.',
  502: 'A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.',
  504: 'No answer came in time. It is not known whether anything was done: check before trying again.',
};
// As the PHP app's ErrorShape: any other 4xx is the request refused, any other status ours.
const CLIENT_ERROR = MESSAGES[400];
const SERVER_ERROR = 'Something went wrong. Please try again.';
// As the PHP app's ErrorShape: the orchestrator's refusal codes (docs/api.md) we have a text of
// our own for, each with the one status it comes with and the text docs/api.md gives it
// (server.test.mjs checks both against that table). Only such a code, with its status, is
// read from an error body and passed on; the body's message never is.
export const CODES = new Map([
  ['approvals_undecided', [400, 'Decide every approval this reply asked for, then send them together.']],
  ['signature_outdated', [401, 'The Tamebi app in Nextcloud is older than its server and must be updated. Please tell your administrator.']],
  ['message_id_taken', [409, 'Another message of this conversation already has this id. Send the message under a new id.']],
  ['reply_in_progress', [409, MESSAGES[409]]],
  ['assistant_bound', [409, 'This conversation belongs to another assistant. Start a new conversation to talk to a different one.']],
  ['assistant_gone', [409, 'The assistant of this conversation is no longer offered. Start a new conversation.']],
  ['registry_conflict', [409, "This name is already taken, is set in the server's own configuration, or the entry changed meanwhile. Reload and try again."]],
  ['overloaded', [429, MESSAGES[429]]],
  ['too_many_running', [429, 'You already have several replies being written. Wait for one to finish, then send again.']],
  ['too_fast', [429, 'You are sending messages faster than allowed. Wait a moment, then send again.']],
  ['unavailable', [503, 'The service is restarting. Please try again in a moment.']],
  ['owned_elsewhere', [503, 'This conversation is being served by another server. Please try again in a moment.']],
  ['tool_unreachable', [502, 'The tool could not be reached or gave no usable answer. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.']],
  ['tool_timeout', [504, 'The tool did not answer in time. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.']],
]);
const MAX_ERROR_BODY = 4096;
// Headers from the orchestrator that reach the browser; everything else stays behind.
const PASSED_HEADERS = ['content-type', 'x-vercel-ai-ui-message-stream', 'x-request-id', 'cache-control'];

/** The island page's own policy, close to Nextcloud's: our script and style only, frames from us. */
const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export function createDevHost(config) {
  const requestToken = randomBytes(24).toString('base64url');
  return createServer((req, res) => {
    handle(config, requestToken, req, res).catch(() => {
      if (!res.headersSent) sendError(res, 502, randomUUID());
      else res.destroy();
    });
  });
}

async function handle(config, requestToken, req, res) {
  const url = new URL(req.url ?? '/', 'http://dev-host');
  const path = url.pathname;
  if (path === '/healthz') return send(res, 200, 'application/json', '{"status":"ok"}');
  if (path === '/island/tamebi-island.js') return serveFile(res, join(config.dist, 'tamebi-island.js'), 'text/javascript; charset=utf-8');
  if (path === '/island/tamebi-island.css') return serveFile(res, join(config.dist, 'tamebi-island.css'), 'text/css; charset=utf-8');
  if (path === '/island/tamebi-admin.js') return serveFile(res, join(config.dist, 'tamebi-admin.js'), 'text/javascript; charset=utf-8');
  if (path === '/island/tamebi-admin.css') return serveFile(res, join(config.dist, 'tamebi-admin.css'), 'text/css; charset=utf-8');
  if (path === '/island/smart-picker.js') return serveFile(res, new URL('./smart-picker.js', import.meta.url).pathname, 'text/javascript; charset=utf-8');
  if (path === '/island/nextcloud-theme.css') return serveFile(res, new URL('./nextcloud-theme.css', import.meta.url).pathname, 'text/css; charset=utf-8');
  if (path === '/login') return send(res, 200, 'text/html; charset=utf-8', loginPage(config));
  const bundle = /^\/apps\/tamebi\/l10n\/([^/]+)\.(js|json)$/.exec(path);
  if (bundle) {
    if (!NEXTCLOUD_LANGUAGE.test(bundle[1])) return sendError(res, 404, randomUUID());
    return serveFile(res, join(config.l10nDir, `${bundle[1]}.${bundle[2]}`), bundle[2] === 'js' ? 'text/javascript; charset=utf-8' : 'application/json');
  }

  const as = url.searchParams.get('as');
  const theme = THEMES.includes(url.searchParams.get('theme') ?? '') ? url.searchParams.get('theme') : 'default';
  if (as !== null && (path === '/' || path === '/apps/tamebi/')) {
    if (!config.users.has(as)) return sendError(res, 401, randomUUID());
    const location = theme === 'default' ? '/apps/tamebi/' : `/apps/tamebi/?theme=${theme}`;
    res.writeHead(303, { 'set-cookie': `${COOKIE}=${as}; Path=/; HttpOnly; SameSite=Strict`, location });
    return res.end();
  }
  const uid = sessionUser(config, req);
  if (path === '/' || path === '/apps/tamebi/') {
    if (!uid) {
      res.writeHead(303, { location: '/login' });
      return res.end();
    }
    const person = await personOf(config, uid);
    return send(res, 200, 'text/html; charset=utf-8', islandPage(config, uid, requestToken, person, theme), { 'content-security-policy': PAGE_CSP });
  }
  if (path === '/composer') {
    // Another app's page with a composer and the Smart Picker (issue #29): what
    // RenderReferenceListener gives such a page in Nextcloud (the island's bundle and config).
    if (!uid) {
      res.writeHead(303, { location: '/login' });
      return res.end();
    }
    const app = COMPOSER_APPS.includes(url.searchParams.get('app') ?? '') ? url.searchParams.get('app') : 'spreed';
    const person = await personOf(config, uid);
    return send(res, 200, 'text/html; charset=utf-8', composerPage(config, uid, requestToken, person, theme, app), { 'content-security-policy': PAGE_CSP });
  }
  if (path === '/settings/admin/ai') {
    // Nextcloud's "Artificial Intelligence" admin section with the app's settings (Settings\Admin):
    // for admins only, as Nextcloud shows admin settings; the registry editor mounts in it.
    if (!uid) {
      res.writeHead(303, { location: '/login' });
      return res.end();
    }
    if (!config.admins?.has(uid)) return sendError(res, 403, randomUUID());
    const person = await personOf(config, uid);
    return send(res, 200, 'text/html; charset=utf-8', adminPage(config, uid, requestToken, person, theme), { 'content-security-policy': PAGE_CSP });
  }
  if (path === '/core/l10n.js') {
    // What Nextcloud's core scripts give every page before an app's: OC.L10N.register (into
    // @nextcloud/l10n's registry) and window.firstDay, from the person's locale.
    const person = uid ? await personOf(config, uid) : { locale: 'en' };
    return send(res, 200, 'text/javascript; charset=utf-8', coreScript(person));
  }

  const requestId = randomUUID();
  if (path === '/apps/tamebi/frame') {
    if (req.method !== 'GET') return sendError(res, 405, requestId);
    if (!uid) return sendError(res, 401, requestId);
    const server = url.searchParams.get('server') ?? '';
    const uri = url.searchParams.get('uri') ?? '';
    const conversation = url.searchParams.get('conversation') ?? '';
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(server) || !uri.startsWith('ui://') || uri.length > 512) return sendError(res, 400, requestId);
    if (conversation !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(conversation)) return sendError(res, 400, requestId);
    // Passed on as given: the orchestrator refuses a document for no conversation (403).
    const query = new URLSearchParams(conversation === '' ? { server, uri } : { server, uri, conversation }).toString();
    return forward(config, { uid, method: 'GET', path: `/v1/apps/resource?${query}`, body: Buffer.alloc(0), requestId, res, frame: true });
  }

  if (path.startsWith(`${OCS_PREFIX}/`)) {
    const body = await readBody(req);
    return handleOcs(config, { req, res, sub: path.slice(OCS_PREFIX.length), uid, tokenOk: sameToken(req.headers.requesttoken, requestToken), requestId, body: body !== null && bodyNamesUser(body) ? null : body });
  }
  if (!path.startsWith('/apps/tamebi/api/')) return sendError(res, 404, requestId);
  const route = apiRoute(req.method ?? 'GET', path.slice('/apps/tamebi/api'.length));
  if (route === null) return sendError(res, 404, requestId);
  if (route === 'bad-method') return sendError(res, 405, requestId);
  if (route === 'bad-id') return sendError(res, 400, requestId);
  if (!uid) return sendError(res, 401, requestId);
  // Nextcloud refuses a state-changing call without the page's CSRF token; so do we, on every call.
  if (!sameToken(req.headers.requesttoken, requestToken)) return sendError(res, 401, requestId);

  const person = await personOf(config, uid);
  const tr = translator(config, person.language);
  const body = await readBody(req);
  if (body === null) return sendError(res, 413, requestId, {}, null, tr);
  if (bodyNamesUser(body)) return sendError(res, 400, requestId, {}, null, tr);
  // As the PHP app: a chat turn carries the person's language, signed with the rest of the query.
  const tag = bcp47(person.language);
  // And their groups (issue #30), as Relay::chatQuery and ::withGroups add them.
  const params = [route === '/chat' && tag ? new URLSearchParams({ lang: tag }).toString() : '', route === '/chat' || route === '/assistants' ? groupQuery(config, uid) : ''].filter(Boolean);
  const query = params.length > 0 ? `?${params.join('&')}` : '';
  return forward(config, { uid, method: req.method ?? 'GET', path: `/v1${route}${query}`, body, requestId, res, req, tr });
}

/** Maps an API path to its orchestrator path, or says why it cannot. */
function apiRoute(method, sub) {
  const only = (allowed, target) => (allowed.includes(method) ? target : 'bad-method');
  if (sub === '/chat') return only(['POST'], sub);
  if (sub === '/conversations') return only(['GET'], sub);
  if (sub === '/assistants') return only(['GET'], sub);
  if (sub === '/apps/tools/call' || sub === '/apps/tools/dispatch' || sub === '/apps/tools/describe') return only(['POST'], sub);
  const stream = /^\/chat\/([^/]+)\/stream$/.exec(sub);
  if (stream) return ID.test(stream[1]) ? only(['GET'], sub) : 'bad-id';
  const stop = /^\/chat\/([^/]+)\/stop$/.exec(sub);
  if (stop) return ID.test(stop[1]) ? only(['POST'], sub) : 'bad-id';
  const conversation = /^\/conversations\/([^/]+)$/.exec(sub);
  if (conversation) return ID.test(conversation[1]) ? only(['GET', 'DELETE'], sub) : 'bad-id';
  return null;
}

/** Sends one request to the orchestrator and streams its answer back unbuffered. */
function forward(config, { uid, method, path, body, requestId, res, req, frame = false, tr = (text) => text }) {
  const target = new URL(path, config.orchestratorUrl);
  // Signed for the URL exactly as it is sent (issue #27: method, path and query are signed).
  const headers = g1Headers({
    proxySecret: config.proxySecret,
    signingSecret: config.signingSecret,
    method,
    url: target,
    uid,
    appPassword: config.users.get(uid),
    servers: config.credentialServers,
    body,
    requestId,
  });
  if (body.length > 0) headers['content-type'] = 'application/json';
  headers['content-length'] = String(body.length);
  if (req?.headers.accept) headers.accept = req.headers.accept;

  return new Promise((resolve) => {
    const upstream = httpRequest(target, { method, headers }, (answer) => {
      const status = answer.statusCode ?? 502;
      if (status >= 400) {
        // As strict as the PHP app (ErrorShape): an error body never passes through, the
        // browser gets our fixed text for its status (or for a refusal code we know), our
        // request id and any Retry-After.
        readErrorCode(answer).then((code) => {
          const retry = answer.headers['retry-after'];
          sendError(res, status <= 599 ? status : 502, requestId, typeof retry === 'string' ? { 'retry-after': retry } : {}, code, tr);
          resolve();
        });
        return;
      }
      const out = { 'x-accel-buffering': 'no' };
      for (const name of PASSED_HEADERS) if (answer.headers[name] !== undefined) out[name] = answer.headers[name];
      if (frame) {
        const policy = answer.headers['content-security-policy'];
        if (status === 200 && (typeof policy !== 'string' || !policy.includes("default-src 'none'"))) {
          // No policy from the orchestrator means no frame: we never serve app HTML without one.
          answer.resume();
          sendError(res, 502, requestId, {}, null, tr);
          return resolve();
        }
        if (typeof policy === 'string') out['content-security-policy'] = policy;
        out['x-content-type-options'] = 'nosniff';
        out['referrer-policy'] = 'no-referrer';
        out['cache-control'] = 'no-store';
      }
      res.writeHead(status, out);
      res.flushHeaders();
      answer.pipe(res);
      answer.on('end', resolve);
      answer.on('error', () => { res.destroy(); resolve(); });
      // Closed without a complete answer and no error: the browser must not wait forever.
      answer.on('close', () => { if (!answer.complete) res.destroy(); resolve(); });
    });
    upstream.on('error', () => {
      if (!res.headersSent) sendError(res, 502, requestId, {}, null, tr);
      else res.destroy();
      resolve();
    });
    // The browser went away: stop the upstream request too (the orchestrator keeps the turn running).
    res.on('close', () => { if (!res.writableFinished) upstream.destroy(); });
    upstream.end(body);
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        resolve(null);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sessionUser(config, req) {
  const cookies = req.headers.cookie ?? '';
  for (const part of cookies.split(';')) {
    const [name, value] = part.trim().split('=');
    if (name === COOKIE && value && config.users.has(value)) return value;
  }
  return null;
}

function sameToken(given, expected) {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function send(res, status, type, body, extra = {}) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...extra });
  res.end(body);
}

function sendError(res, status, requestId, extra = {}, upstreamCode = null, tr = (text) => text) {
  // A second failure of the same forward (the answer and the request both erring): the first
  // answer stands, or the browser's connection is cut if it was under way.
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  const known = CODES.get(upstreamCode);
  const code = known && known[0] === status ? upstreamCode : null;
  const message = tr(code ? known[1] : MESSAGES[status] ?? (status >= 400 && status < 500 ? CLIENT_ERROR : SERVER_ERROR));
  const error = code ? { message, requestId, code } : { message, requestId };
  // A Retry-After passes only as the PHP app passes it (whole seconds, on a 429 or 503), and
  // in the body too: the chat transport sees only the body.
  const { 'retry-after': wait, ...rest } = extra;
  const retry = (status === 429 || status === 503) && typeof wait === 'string' && /^[0-9]{1,6}$/.test(wait) && Number(wait) > 0;
  if (retry) error.retryAfter = Number(wait);
  send(res, status, 'application/json', JSON.stringify({ error }), { 'x-request-id': requestId, ...rest, ...(retry ? { 'retry-after': wait } : {}) });
}

/** The `error.code` string of an orchestrator error body (unchecked: sendError checks it), or null. */
function readErrorCode(answer) {
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    answer.on('data', (chunk) => {
      size += chunk.length;
      if (size <= MAX_ERROR_BODY) chunks.push(chunk);
    });
    answer.on('end', () => {
      try {
        const code = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.error?.code;
        resolve(typeof code === 'string' ? code : null);
      } catch {
        resolve(null);
      }
    });
    answer.on('error', () => resolve(null));
    // Closed before its end (a no-op after it): the code is unknown, the answer still goes out.
    answer.on('close', () => resolve(null));
  });
}

async function serveFile(res, file, type) {
  try {
    send(res, 200, type, await readFile(file));
  } catch {
    send(res, 404, 'text/plain; charset=utf-8', 'Build the island first: npm run build');
  }
}

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Apps whose composer the dev host emulates at /composer?app=… (Nextcloud app ids). */
export const COMPOSER_APPS = ['spreed', 'text', 'mail', 'collectives', 'deck'];

function islandPage(config, uid, requestToken, person, theme) {
  return page(config, uid, requestToken, person, theme, 'Tamebi (dev host)', '', '<div id="tamebi-island"></div>');
}

/** A page of another app with a composer and the Smart Picker (smart-picker.js plays the picker). */
function composerPage(config, uid, requestToken, person, theme, app) {
  // The provider as the Nextcloud app's TamebiReferenceProvider lists it, in the person's language.
  const providers = JSON.stringify([{ id: 'tamebi', title: translator(config, person.language)('Ask Tamebi') }]);
  const main = `<main id="content" class="app-${escapeHtml(app)}">
<label for="composer">Write a message</label>
<textarea id="composer" rows="4" data-testid="host-composer"></textarea>
<button type="button" id="smart-picker" data-providers="${escapeHtml(providers)}">Smart Picker</button>
</main>`;
  return page(config, uid, requestToken, person, theme, `${app} composer (dev host)`, '\n<script src="/island/smart-picker.js" defer></script>', main);
}

/** The admin settings page: the app's section (templates/admin.php's mount point) and its bundle. */
function adminPage(config, uid, requestToken, person, theme) {
  const main = `<main id="content" class="app-settings"><h1 class="hidden-visually">Administration settings</h1>
<div id="app-content"><div id="tamebi-admin" class="section">
<h2>Tamebi</h2>
<h3>Manage servers and assistants</h3>
<div id="tamebi-admin-app" data-ocs-base="${OCS_PREFIX}"></div>
</div></div></main>`;
  const assets = '\n<link rel="stylesheet" href="/island/tamebi-admin.css">\n<script src="/island/tamebi-admin.js" defer></script>';
  return page(config, uid, requestToken, person, theme, 'Administration settings (dev host)', assets, main);
}

function page(config, uid, requestToken, person, theme, title, extraScripts, body) {
  const state = {
    apiBase: '/apps/tamebi/api',
    frameUrl: '/apps/tamebi/frame',
    ocsBase: OCS_PREFIX,
    ...(config.groups?.get(uid)?.length ? { groups: [...config.groups.get(uid)].sort() } : {}),
    user: { uid, displayName: uid.charAt(0).toUpperCase() + uid.slice(1) },
    workspaceConnected: true,
    linkBase: config.ncUrl,
    ...(person.timeZone ? { timeZone: person.timeZone } : {}),
  };
  const encoded = Buffer.from(JSON.stringify(state), 'utf8').toString('base64');
  // As Nextcloud's page: the language and locale on <html>, core's l10n first, then the app's
  // bundle for the language (only one that exists; English needs none), then the app.
  const shipped = bundleLanguage(config, person.language);
  const bundle = shipped ? `\n<script src="/apps/tamebi/l10n/${escapeHtml(shipped)}.js"></script>` : '';
  return `<!doctype html>
<html lang="${escapeHtml(person.language.replace('_', '-'))}" data-locale="${escapeHtml(person.locale)}">
<head data-requesttoken="${escapeHtml(requestToken)}">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/island/nextcloud-theme.css">
<link rel="stylesheet" href="/island/tamebi-island.css">
<script src="/core/l10n.js"></script>${bundle}
<script src="/island/tamebi-island.js" defer></script>${extraScripts}
</head>
<body data-theme-${theme} data-themes="${theme}">
<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${encoded}">
${body}
</body>
</html>
`;
}

/**
 * The person's language, locale and time zone: DEV_LANGUAGE / DEV_LOCALE / DEV_TIMEZONE, else
 * their settings as the stand-in's OCS cloud/user gives them (asked as them, with their app
 * password), else English. Nextcloud takes an unset locale from the language.
 */
async function personOf(config, uid) {
  let language = config.language;
  let locale = config.locale;
  if ((!language || !locale) && config.ncUrl && config.users.has(uid)) {
    const user = await standinUser(config, uid);
    language ??= typeof user.language === 'string' && NEXTCLOUD_LANGUAGE.test(user.language) ? user.language : null;
    locale ??= typeof user.locale === 'string' && NEXTCLOUD_LANGUAGE.test(user.locale) ? user.locale : null;
  }
  language ??= 'en';
  return { language, locale: locale ?? language, timeZone: config.timeZone };
}

async function standinUser(config, uid) {
  try {
    const auth = Buffer.from(`${uid}:${config.users.get(uid)}`).toString('base64');
    const r = await fetch(`${config.ncUrl}/ocs/v2.php/cloud/user`, {
      headers: { authorization: `Basic ${auth}`, 'ocs-apirequest': 'true', accept: 'application/json' },
      signal: AbortSignal.timeout(5000),
    });
    const data = r.ok ? (await r.json())?.ocs?.data : null;
    return data && typeof data === 'object' ? data : {};
  } catch {
    return {};
  }
}

/** Nextcloud's language code as a BCP 47 tag (as the PHP app's Relay::language), or null. */
export function bcp47(code) {
  const tag = code.replace('@latin', '-Latn').replaceAll('_', '-');
  return /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$/.test(tag) ? tag : null;
}

/** The bundle the app ships for `language`: its own, else its base language's (de for de_CH), or null. */
function bundleLanguage(config, language) {
  if (!NEXTCLOUD_LANGUAGE.test(language) || language === 'en') return null;
  const base = language.split(/[_@]/)[0];
  return [language, base].find((l) => l !== 'en' && readBundle(config, l) !== null) ?? null;
}

/** The app's l10n/<lang>.json translations (read on each use: edits show on reload), or null. */
function readBundle(config, language) {
  try {
    const bundle = JSON.parse(readFileSync(join(config.l10nDir, `${language}.json`), 'utf8'));
    return bundle && typeof bundle.translations === 'object' ? bundle.translations : null;
  } catch {
    return null;
  }
}

/** Our error texts in the person's language, as the PHP app's IL10N gives them. */
function translator(config, language) {
  const shipped = bundleLanguage(config, language);
  const translations = shipped ? readBundle(config, shipped) : null;
  return (text) => (translations && typeof translations[text] === 'string' ? translations[text] : text);
}

/** The first day of the week for a locale, 0 = Sunday (Intl's week data; Monday without it). */
function firstDayOf(locale) {
  try {
    const l = new Intl.Locale(locale.replaceAll('_', '-'));
    const info = typeof l.getWeekInfo === 'function' ? l.getWeekInfo() : l.weekInfo;
    return info ? info.firstDay % 7 : 1;
  } catch {
    return 1;
  }
}

function coreScript(person) {
  return `// The dev host's stand-in for what Nextcloud's core gives every page.
window.firstDay = ${firstDayOf(person.locale)};
window.OC = window.OC || {};
window.OC.L10N = {
  register: function (app, bundle) {
    var t = (globalThis._oc_l10n_registry_translations = globalThis._oc_l10n_registry_translations || {});
    var p = (globalThis._oc_l10n_registry_plural_functions = globalThis._oc_l10n_registry_plural_functions || {});
    t[app] = Object.assign({}, t[app] || {}, bundle);
    // The plural rule of every language we ship (nplurals=2; plural=(n != 1)).
    p[app] = function (n) { return n === 1 ? 0 : 1; };
  },
};
`;
}

function loginPage(config) {
  const links = [...config.users.keys()].map((u) => `<li><a href="/apps/tamebi/?as=${encodeURIComponent(u)}">Sign in as ${escapeHtml(u)}</a></li>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tamebi dev host: sign in</title></head><body><h1>Sign in (stand-in users)</h1><ul>${links}</ul></body></html>`;
}
