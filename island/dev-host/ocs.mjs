// The dev host's twin of the PHP app's registry OCS routes (issue #30):
// /ocs/v2.php/apps/tamebi/api/v1/admin/{servers,assistants,policy}… (RegistryController, for
// DEV_ADMINS only, admin-signed as OcsAnswers::forAdmin lets the app sign) and
// /ocs/v2.php/apps/tamebi/api/v1/assistants… (AssistantsController, every signed-in person, their
// DEV_GROUPS as signed `group` parameters as Registry\MemberOf adds them).
//
// Owns: the route table, Nextcloud's OCS request rules (`OCS-APIRequest: true` and the page's
// CSRF token), and the OCS v2 envelope around each answer (`{"ocs": {"meta", "data"}}`; a failure
// is `data: {"error", "message"}` with the HTTP status, as OcsAnswers answers).
// Must never: sign an admin request for a uid that is not in DEV_ADMINS, or take a group from
// the request.
import { request as httpRequest } from 'node:http';
import { g1Headers } from './g1.mjs';

export const OCS_PREFIX = '/ocs/v2.php/apps/tamebi/api/v1';
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const PERSONAL_ID = /^u-[0-9a-f]{32}$/;
const MAX_BODY = 256 * 1024;
// As RegistryError: our own fixed text for each status, never the orchestrator's words.
const FAILURES = {
  400: ['refused', 'The orchestrator refused this entry. Check its fields against what is allowed (for a personal assistant: the tools your administrator allows personal assistants).'],
  401: ['unauthenticated', 'Not signed in'],
  403: ['forbidden', 'This action is not allowed.'],
  404: ['not_found', 'Entry not found'],
  405: ['method_not_allowed', 'Method not allowed'],
  409: ['conflict', "This name is already taken, is set in the orchestrator's own configuration (read-only here), or the entry changed meanwhile. Reload and try again."],
  502: ['orchestrator_unreachable', 'The orchestrator could not be reached. Try again in a moment.'],
};

/** `{admin, target}` for an OCS path and method, or a failure status. */
export function ocsRoute(method, sub) {
  const only = (allowed, target, admin) => (allowed.includes(method) ? { target, admin } : { status: 405 });
  if (sub === '/admin/servers') return only(['GET', 'POST'], '/v1/admin/servers', true);
  if (sub === '/admin/assistants') return only(['GET', 'POST'], '/v1/admin/assistants', true);
  if (sub === '/admin/policy') return only(['GET', 'PUT'], '/v1/admin/policy', true);
  if (sub === '/assistants') return only(['GET', 'POST'], '/v1/assistants', false);
  let m = /^\/admin\/(servers|assistants)\/([^/]+)$/.exec(sub);
  if (m) return NAME.test(m[2]) ? only(['PUT', 'DELETE'], `/v1/admin/${m[1]}/${m[2]}`, true) : { status: 404 };
  m = /^\/admin\/assistants\/([^/]+)\/approve$/.exec(sub);
  if (m) return PERSONAL_ID.test(m[1]) ? only(['POST'], `/v1/admin/assistants/${m[1]}/approve`, true) : { status: 404 };
  m = /^\/assistants\/([^/]+)(\/share)?$/.exec(sub);
  if (m) {
    if (!PERSONAL_ID.test(m[1])) return { status: 404 };
    return m[2] ? only(['POST'], `/v1/assistants/${m[1]}/share`, false) : only(['PUT', 'DELETE'], `/v1/assistants/${m[1]}`, false);
  }
  return { status: 404 };
}

/** `group=a&group=b` for the person's DEV_GROUPS (as MemberOf::query), '' for none. */
export function groupQuery(config, uid) {
  return (config.groups?.get(uid) ?? []).map((g) => `group=${encodeURIComponent(g)}`).join('&');
}

/** Answers one OCS request; `uid` is the session's (null: not signed in). */
export async function handleOcs(config, { req, res, sub, uid, tokenOk, requestId, body }) {
  const route = ocsRoute(req.method ?? 'GET', sub);
  if (route.status) return fail(res, route.status, requestId);
  // Nextcloud lets a session's OCS request through only with OCS-APIRequest and the CSRF token.
  if (!uid) return fail(res, 401, requestId);
  if (req.headers['ocs-apirequest'] !== 'true' || !tokenOk) return fail(res, 401, requestId);
  if (route.admin && !config.admins?.has(uid)) return fail(res, 403, requestId);
  if (body === null) return fail(res, 400, requestId);
  const groups = groupQuery(config, uid);
  // As the app: the person's groups go with the listing and a share (signed with the rest).
  const withGroups = !route.admin && groups !== '' && (route.target === '/v1/assistants' ? req.method === 'GET' : route.target.endsWith('/share'));
  const path = withGroups ? `${route.target}?${groups}` : route.target;
  const answer = await call(config, { uid, method: req.method, path, body, requestId, admin: route.admin });
  if (answer === null) return fail(res, 502, requestId);
  if (answer.status >= 400) return fail(res, FAILURES[answer.status] ? answer.status : 502, requestId);
  let data = [];
  if (answer.status !== 204) {
    try {
      data = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return fail(res, 502, requestId);
    }
  }
  return envelope(res, 200, requestId, data);
}

function call(config, { uid, method, path, body, requestId, admin }) {
  const target = new URL(path, config.orchestratorUrl);
  const headers = g1Headers({ proxySecret: config.proxySecret, signingSecret: config.signingSecret, method, url: target, uid, servers: [], body, requestId, admin });
  if (body.length > 0) headers['content-type'] = 'application/json';
  headers['content-length'] = String(body.length);
  return new Promise((resolve) => {
    const upstream = httpRequest(target, { method, headers }, (answer) => {
      const chunks = [];
      let size = 0;
      answer.on('data', (chunk) => {
        size += chunk.length;
        if (size <= MAX_BODY) chunks.push(chunk);
      });
      answer.on('end', () => resolve(size <= MAX_BODY ? { status: answer.statusCode ?? 502, body: Buffer.concat(chunks) } : null));
      answer.on('error', () => resolve(null));
    });
    upstream.on('error', () => resolve(null));
    upstream.end(body);
  });
}

function fail(res, status, requestId) {
  const [error, message] = FAILURES[status] ?? FAILURES[502];
  return envelope(res, status, requestId, { error, message });
}

function envelope(res, status, requestId, data) {
  const meta = { status: status < 400 ? 'ok' : 'failure', statuscode: status, message: status < 400 ? 'OK' : '' };
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-request-id': requestId });
  res.end(JSON.stringify({ ocs: { meta, data } }));
}
