// @vitest-environment jsdom
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../src/config';

const good = { apiBase: '/apps/tamebi/api', frameUrl: '/apps/tamebi/frame', user: { uid: 'alice', displayName: 'Alice Ä' }, workspaceConnected: true };
const b64 = (v: unknown) => btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(v))));

function page(body: string, token = 'tok123') {
  document.head.dataset.requesttoken = token;
  document.body.innerHTML = body;
}

describe('readConfig', () => {
  beforeEach(() => { document.head.removeAttribute('data-requesttoken'); document.body.innerHTML = ''; });

  it('takes the person\'s time zone only when Intl knows it', () => {
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, timeZone: 'Europe/Berlin' })}">`);
    expect(readConfig(document).timeZone).toBe('Europe/Berlin');
    for (const timeZone of ['Mars/Olympus', '', 42]) {
      page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, timeZone })}">`);
      expect(readConfig(document)).not.toHaveProperty('timeZone');
    }
  });

  it('takes the OCS base as a path on this site, and none when the page gives none', () => {
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, ocsBase: '/nc/ocs/v2.php/apps/tamebi/api/v1/' })}">`);
    expect(readConfig(document).ocsBase).toBe('/nc/ocs/v2.php/apps/tamebi/api/v1');
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64(good)}">`);
    expect(readConfig(document)).not.toHaveProperty('ocsBase');
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, ocsBase: 'https://evil.example/ocs' })}">`);
    expect(() => readConfig(document)).toThrow(/ocsBase/);
  });

  it('takes the person\'s groups as a list of names to offer, dropping anything else', () => {
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, groups: ['staff', 42, '', 'a b'] })}">`);
    expect(readConfig(document).groups).toEqual(['staff', 'a b']);
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64({ ...good, groups: 'staff' })}">`);
    expect(readConfig(document)).not.toHaveProperty('groups');
  });

  it('reads Nextcloud initial state (base64 JSON, UTF-8)', () => {
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64(good)}">`);
    expect(readConfig(document)).toEqual({ ...good, linkBase: '', requestToken: 'tok123' });
  });

  it('reads a data-config div', () => {
    const div = document.createElement('div');
    div.id = 'tamebi-config';
    div.dataset.config = JSON.stringify({ ...good, linkBase: 'http://127.0.0.1:8080/' });
    document.head.dataset.requesttoken = 't';
    document.body.appendChild(div);
    expect(readConfig(document).linkBase).toBe('http://127.0.0.1:8080');
  });

  const bad: Array<[string, unknown]> = [
    ['apiBase protocol-relative', { ...good, apiBase: '//evil.example/api' }],
    ['apiBase absolute URL', { ...good, apiBase: 'https://evil.example' }],
    ['frameUrl missing', { ...good, frameUrl: undefined }],
    ['uid empty', { ...good, user: { uid: '' } }],
    ['workspaceConnected not boolean', { ...good, workspaceConnected: 'yes' }],
    ['linkBase javascript', { ...good, linkBase: 'javascript:alert(1)' }],
  ];
  it.each(bad)('refuses %s with a clear error', (_label, cfg) => {
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64(cfg)}">`);
    expect(() => readConfig(document)).toThrow(ConfigError);
  });

  it('refuses a page without config, bad base64, or without a CSRF token', () => {
    page('');
    expect(() => readConfig(document)).toThrow(/No configuration/);
    page('<input type="hidden" id="initial-state-tamebi-tamebi-config" value="%%%">');
    expect(() => readConfig(document)).toThrow(/base64/);
    page(`<input type="hidden" id="initial-state-tamebi-tamebi-config" value="${b64(good)}">`, '');
    expect(() => readConfig(document)).toThrow(/CSRF/);
  });
});
