/// <reference types="node" />
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assistantProblems, glob, matches, patternProblem, serverProblems, withinCeiling } from '../src/registry';
import { listedTools, unwrap, type ServerEntry } from '../src/ocs';

// The admin page's and the island's checks before sending (issue #30): the same rules as the PHP
// app's Registry\Validation and the orchestrator's ToolPattern, so the preview shows what the
// servers will accept.

const tools = { probe: ['echo', 'echo_twice', 'weather'], nextcloud: null };

const shared = JSON.parse(readFileSync(new URL('../../testdata/pattern-preview.json', import.meta.url), 'utf8')) as {
  cases: Array<{ pattern: string; tools: Record<string, string[] | null>; matches: string[] }>;
};

describe('pattern preview', () => {
  it.each(shared.cases)('reproduces the shared case $pattern, as the PHP app\'s Validation::matches', (c) => {
    expect(matches(c.pattern, c.tools)).toEqual(c.matches);
  });

  it('globs with * as any run of characters and nothing else special', () => {
    expect(glob('echo*', 'echo_twice')).toBe(true);
    expect(glob('echo', 'echo_twice')).toBe(false);
    expect(glob('e.ho', 'echo')).toBe(false);
    expect(glob('*', '')).toBe(true);
    expect(glob('a(b', 'a(b')).toBe(true);
  });

  it('lists the listed tools a pattern matches, across servers', () => {
    expect(matches('probe/echo*', tools)).toEqual(['probe/echo', 'probe/echo_twice']);
    expect(matches('probe/*', tools)).toEqual(['probe/echo', 'probe/echo_twice', 'probe/weather']);
    expect(matches('*/weather', tools)).toEqual(['probe/weather', 'nextcloud/weather', 'tamebi/weather']);
    expect(matches('probe/nothing', tools)).toEqual([]);
    expect(matches('not a pattern', tools)).toEqual([]);
  });

  it('counts a server of unknown tools as matching, so it is not refused for want of a listing', () => {
    expect(matches('nextcloud/calendar_*', tools)).toEqual(['nextcloud/calendar_*']);
    expect(patternProblem('nextcloud/calendar_*', tools)).toBeNull();
  });

  it('says why a pattern would be refused', () => {
    expect(patternProblem('probe', tools)).toMatch(/server\/tool/);
    expect(patternProblem('probe/echo/x', tools)).toMatch(/server\/tool/);
    expect(patternProblem('weather/now', tools)).toMatch(/No server is named "weather"/);
    expect(patternProblem('probe/nothing', tools)).toMatch(/matches none/);
    expect(patternProblem('tamebi/memory_*', tools)).toBeNull();
  });
});

describe('the ceiling of personal assistants', () => {
  it('allows a pattern only when a ceiling pattern covers it as text, as ToolPattern::within', () => {
    expect(withinCeiling('probe/echo', ['probe/echo*'])).toBe(true);
    expect(withinCeiling('probe/echo_*', ['probe/echo*'])).toBe(true);
    expect(withinCeiling('probe/*', ['probe/echo*'])).toBe(false);
    expect(withinCeiling('*/echo', ['probe/*'])).toBe(false);
    expect(withinCeiling('probe/echo', [])).toBe(false);
    expect(withinCeiling('bad', ['*/*'])).toBe(false);
  });
});

describe('form checks', () => {
  it('checks a server: name, URL, trust only without a credential, no duplicate', () => {
    expect(serverProblems({ name: 'probe', url: 'http://127.0.0.1:9/mcp', auth: 'none', trust: 'reads' }, [])).toEqual({});
    const bad = serverProblems({ name: 'tamebi', url: 'https://u:p@x/mcp?q', auth: 'nextcloud', trust: 'reads' }, []);
    expect(Object.keys(bad).sort()).toEqual(['name', 'trust', 'url']);
    expect(serverProblems({ name: 'probe', url: 'ftp://x/mcp', auth: 'none', trust: '' }, []).url).toBeDefined();
    expect(serverProblems({ name: 'probe', url: 'https://x/a;b', auth: 'none', trust: '' }, []).url).toBeDefined();
    expect(serverProblems({ name: 'probe', url: 'https://x/mcp', auth: 'none', trust: '' }, ['probe']).name).toMatch(/already exists/);
    expect(serverProblems({ name: 'a b', url: 'https://x/mcp', auth: 'none', trust: '' }, []).name).toBeDefined();
  });

  it('checks an admin assistant: name, one-line description, patterns', () => {
    const good = { name: 'echoer', description: 'Echoes.', instructions: '', tools: ['probe/echo*'] };
    expect(assistantProblems(good, [], tools, false)).toEqual({});
    expect(assistantProblems(good, ['echoer'], tools, false).name).toMatch(/already exists/);
    expect(assistantProblems({ ...good, description: '' }, [], tools, false).description).toBeDefined();
    expect(assistantProblems({ ...good, description: 'two\nlines' }, [], tools, false).description).toBeDefined();
    expect(assistantProblems({ ...good, instructions: 'x'.repeat(8001) }, [], tools, false).instructions).toBeDefined();
    expect(assistantProblems({ ...good, tools: ['probe/none'] }, [], tools, false).tools).toMatch(/^probe\/none: /);
  });

  it('lets a personal assistant have any name of 1-64 characters and no description', () => {
    const mine = { name: 'Mein Helfer ✓', description: '', instructions: 'Be brief.', tools: [] };
    expect(assistantProblems(mine, [], tools, true)).toEqual({});
    expect(assistantProblems({ ...mine, name: ' ' }, [], tools, true).name).toBeDefined();
    expect(assistantProblems({ ...mine, name: 'x'.repeat(65) }, [], tools, true).name).toBeDefined();
  });
});

describe('the OCS answers', () => {
  it('unwraps the OCS v2 envelope, null for anything else', () => {
    expect(unwrap('{"ocs":{"meta":{"status":"ok","statuscode":200},"data":{"servers":[]}}}')).toEqual({ servers: [] });
    expect(unwrap('<html>')).toBeNull();
    expect(unwrap('{"servers":[]}')).toBeNull();
  });

  it('gives pattern previews each server\'s tools, none for a conflicting one', () => {
    const entry = (name: string, list: string[], conflict = false): ServerEntry => ({ name, url: 'http://x/mcp', auth: 'none', source: 'admin', conflict, running: true, tools: list });
    expect(listedTools([entry('probe', ['echo']), entry('nextcloud', []), entry('clash', ['x'], true)])).toEqual({ probe: ['echo'], nextcloud: null });
  });
});
