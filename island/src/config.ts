/**
 * The island's configuration, read once from the page that embeds it.
 *
 * Owns: finding and validating `tamebi-config` and the CSRF token. Inside Nextcloud the PHP
 * app renders the config with IInitialState, which becomes
 * `<input type="hidden" id="initial-state-tamebi-tamebi-config" value="base64(json)">`; a
 * plain `<div id="tamebi-config" data-config="json">` is accepted too. The CSRF token is
 * `<head data-requesttoken>`, as Nextcloud renders it.
 *
 * Must never: read configuration from anywhere a frame or the model can write (URL
 * fragments, messages, local storage); guess a missing value.
 */

export interface IslandConfig {
  /** Base of our API routes, e.g. `/apps/tamebi/api`. */
  apiBase: string;
  /** The frame route that serves MCP App documents, e.g. `/apps/tamebi/frame`. */
  frameUrl: string;
  user: { uid: string; displayName: string };
  workspaceConnected: boolean;
  /** Prefix for Nextcloud links built by the host ("" = same origin, pretty URLs). */
  linkBase: string;
  /** The app's OCS routes, e.g. `/ocs/v2.php/apps/tamebi/api/v1` (a person's own assistants);
   *  absent: the page offers none. */
  ocsBase?: string;
  /** The person's Nextcloud groups, offered when they propose an assistant to one (issue #30). */
  groups?: string[];
  /** Nextcloud's CSRF token; sent as the `requesttoken` header on every request. */
  requestToken: string;
  /** The person's time zone from their Nextcloud settings (core/timezone), when the page says;
   *  dates are then shown in it, else in the browser's. An IANA name Intl knows. */
  timeZone?: string;
}

import { t } from './l10n';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function readConfig(doc: Document): IslandConfig {
  const raw = readRawConfig(doc);
  const requestToken = doc.head?.dataset.requesttoken ?? '';
  return validateConfig(raw, requestToken);
}

function readRawConfig(doc: Document): unknown {
  const input = doc.getElementById('initial-state-tamebi-tamebi-config');
  if (input instanceof HTMLInputElement) {
    try {
      const bytes = Uint8Array.from(atob(input.value), (c) => c.charCodeAt(0));
      return JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new ConfigError(t('tamebi', 'The initial state "tamebi-config" is not base64-encoded JSON.'));
    }
  }
  const div = doc.getElementById('tamebi-config');
  const json = div?.dataset.config;
  if (json !== undefined) {
    try {
      return JSON.parse(json);
    } catch {
      throw new ConfigError(t('tamebi', 'The data-config attribute of #tamebi-config is not JSON.'));
    }
  }
  throw new ConfigError(t('tamebi', 'No configuration found: expected the initial state "tamebi-config".'));
}

export function validateConfig(raw: unknown, requestToken: string): IslandConfig {
  if (typeof raw !== 'object' || raw === null) throw new ConfigError(t('tamebi', 'tamebi-config must be a JSON object.'));
  const c = raw as Record<string, unknown>;
  const apiBase = routeBase(c.apiBase, 'apiBase');
  const frameUrl = routeBase(c.frameUrl, 'frameUrl');
  const user = c.user as Record<string, unknown> | undefined;
  if (typeof user !== 'object' || user === null || typeof user.uid !== 'string' || user.uid === '') {
    throw new ConfigError(t('tamebi', 'tamebi-config.user.uid must be a non-empty string.'));
  }
  const displayName = typeof user.displayName === 'string' && user.displayName !== '' ? user.displayName : user.uid;
  if (typeof c.workspaceConnected !== 'boolean') {
    throw new ConfigError(t('tamebi', 'tamebi-config.workspaceConnected must be true or false.'));
  }
  const linkBase = c.linkBase === undefined ? '' : linkPrefix(c.linkBase);
  if (requestToken === '') throw new ConfigError(t('tamebi', 'No CSRF token: expected <head data-requesttoken>.'));
  const timeZone = knownZone(c.timeZone);
  const ocsBase = c.ocsBase === undefined ? null : routeBase(c.ocsBase, 'ocsBase');
  // Only offered in a list, never trusted: the orchestrator takes groups from signed queries.
  const groups = Array.isArray(c.groups) ? c.groups.filter((g): g is string => typeof g === 'string' && g !== '' && g.length <= 255).slice(0, 256) : [];
  return { apiBase, frameUrl, user: { uid: user.uid, displayName }, workspaceConnected: c.workspaceConnected, linkBase, requestToken, ...(timeZone ? { timeZone } : {}), ...(ocsBase ? { ocsBase } : {}), ...(groups.length > 0 ? { groups } : {}) };
}

/** An IANA zone Intl knows, canonicalised; anything else (absent, unknown) is none. */
function knownZone(value: unknown): string | null {
  if (typeof value !== 'string' || value === '' || value.length > 64) return null;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** A same-origin absolute path without a trailing slash. */
function routeBase(value: unknown, name: string): string {
  if (typeof value !== 'string' || !/^\/[A-Za-z0-9._~\-/]*$/.test(value) || value.startsWith('//')) {
    throw new ConfigError(t('tamebi', 'tamebi-config.{name} must be an absolute path on this site, like "/apps/tamebi/api".', { name }));
  }
  return value.replace(/\/+$/, '');
}

/** "" , a path, or an http(s) origin with an optional path; no trailing slash. */
function linkPrefix(value: unknown): string {
  if (value === '') return '';
  if (typeof value === 'string') {
    if (/^\/[A-Za-z0-9._~\-/]*$/.test(value) && !value.startsWith('//')) return value.replace(/\/+$/, '');
    if (/^https?:\/\/[A-Za-z0-9.\-]+(:\d+)?(\/[A-Za-z0-9._~\-/]*)?$/.test(value)) return value.replace(/\/+$/, '');
  }
  throw new ConfigError(t('tamebi', 'tamebi-config.linkBase must be "", a path, or an http(s) URL.'));
}
