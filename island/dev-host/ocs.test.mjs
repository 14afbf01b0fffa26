import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.mjs';
import { groupQuery, ocsRoute } from './ocs.mjs';

// The dev host's registry OCS routes: the PHP app's route table (appinfo/routes.php), admin
// routes marked for the admin signature, and the person's groups as MemberOf sends them.

const base = { ORCHESTRATOR_URL: 'http://127.0.0.1:8700', TAMEBI_PROXY_SECRET: 'p', TAMEBI_SIGNING_SECRET: 's', DEV_USERS: 'root:pw,alice:pw,bob:pw' };
const id = `u-${'a'.repeat(32)}`;

describe('registry OCS routes', () => {
  it('maps each route of the app to its orchestrator twin, admin ones marked', () => {
    expect(ocsRoute('GET', '/admin/servers')).toEqual({ target: '/v1/admin/servers', admin: true });
    expect(ocsRoute('PUT', '/admin/servers/probe')).toEqual({ target: '/v1/admin/servers/probe', admin: true });
    expect(ocsRoute('DELETE', '/admin/assistants/echoer')).toEqual({ target: '/v1/admin/assistants/echoer', admin: true });
    expect(ocsRoute('POST', `/admin/assistants/${id}/approve`)).toEqual({ target: `/v1/admin/assistants/${id}/approve`, admin: true });
    expect(ocsRoute('PUT', '/admin/policy')).toEqual({ target: '/v1/admin/policy', admin: true });
    expect(ocsRoute('POST', '/assistants')).toEqual({ target: '/v1/assistants', admin: false });
    expect(ocsRoute('PUT', `/assistants/${id}`)).toEqual({ target: `/v1/assistants/${id}`, admin: false });
    expect(ocsRoute('POST', `/assistants/${id}/share`)).toEqual({ target: `/v1/assistants/${id}/share`, admin: false });
  });

  it('refuses other methods, bad names and ids, and unknown paths', () => {
    expect(ocsRoute('DELETE', '/admin/servers')).toEqual({ status: 405 });
    expect(ocsRoute('GET', `/assistants/${id}/share`)).toEqual({ status: 405 });
    expect(ocsRoute('PUT', '/admin/servers/a%2Fb')).toEqual({ status: 404 });
    expect(ocsRoute('POST', '/admin/assistants/echoer/approve')).toEqual({ status: 404 });
    expect(ocsRoute('PUT', '/assistants/../admin/policy')).toEqual({ status: 404 });
    expect(ocsRoute('GET', '/admin/status')).toEqual({ status: 404 });
  });

  it('reads admins and groups of known users only, and sends the groups encoded', () => {
    const config = loadConfig({ ...base, DEV_ADMINS: 'root', DEV_GROUPS: 'alice:staff,bob:staff,bob:a&b' });
    expect([...config.admins]).toEqual(['root']);
    expect(groupQuery(config, 'bob')).toBe('group=staff&group=a%26b');
    expect(groupQuery(config, 'root')).toBe('');
    expect(() => loadConfig({ ...base, DEV_ADMINS: 'mallory' })).toThrow(/DEV_ADMINS/);
    expect(() => loadConfig({ ...base, DEV_GROUPS: 'mallory:staff' })).toThrow(/DEV_GROUPS/);
    expect(loadConfig(base).admins.size).toBe(0);
  });
});
