import { describe, expect, it } from 'vitest';
import { buildLinkUrl, parseLinkTarget } from '../src/apps/links';

describe('parseLinkTarget accepts the three targets', () => {
  it('a file by id', () => {
    expect(parseLinkTarget('tamebi:file/4242')).toEqual({ kind: 'file', fileId: '4242' });
  });
  it('a folder by path, percent-encoded', () => {
    expect(parseLinkTarget('tamebi:folder/%2FProjects%2FBudget%202026')).toEqual({ kind: 'folder', path: '/Projects/Budget 2026' });
    expect(parseLinkTarget('tamebi:folder//Documents')).toEqual({ kind: 'folder', path: '/Documents' });
    expect(parseLinkTarget('tamebi:folder///evil.example')).toBeNull();
    expect(parseLinkTarget('tamebi:folder/%2FDocuments')).toEqual({ kind: 'folder', path: '/Documents' });
  });
  it('a day by date', () => {
    expect(parseLinkTarget('tamebi:day/2026-01-15')).toEqual({ kind: 'day', date: '2026-01-15' });
  });
});

describe('parseLinkTarget refuses everything else', () => {
  const refused = [
    '//evil.example',
    '//evil.example/apps/files/?fileid=1',
    '/apps/files/?fileid=1',
    'https://evil.example',
    'http://localhost/apps/files',
    'HTTPS://evil.example',
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'blob:https://x/uuid',
    '\\\\evil.example',
    '/\\evil.example',
    'tamebi:file/1\\..',
    ' tamebi:file/1',
    'tamebi:file/1 ',
    'tamebi:file/1\n',
    'tamebi:file/\u00001',
    '\u0001tamebi:file/1',
    'tamebi:file/1\u200b',
    'TAMEBI:file/1',
    'tamebi:file/0',
    'tamebi:file/-1',
    'tamebi:file/1e3',
    'tamebi:file/12345678901234567890',
    'tamebi:file/1?x=//evil.example',
    'tamebi:file/1#//evil.example',
    'tamebi://file/1',
    'tamebi:files/1',
    'tamebi:folder/relative/path',
    'tamebi:folder/%2F%2Fevil.example',
    'tamebi:folder/%2F..%2F..%2Fetc',
    'tamebi:folder/%2Fa%5Cb',
    'tamebi:folder/%2Fa%0Ab',
    'tamebi:folder/%E0%A4%A',
    'tamebi:folder/%2Fa?b',
    'tamebi:day/2026-02-30',
    'tamebi:day/2026-13-01',
    'tamebi:day/26-01-15',
    'tamebi:day/2026-01-15T00:00',
    'tamebi:day/../../admin',
    'tamebi:',
    '',
  ];
  it.each(refused)('%j', (raw) => {
    expect(parseLinkTarget(raw)).toBeNull();
  });
});

describe('buildLinkUrl', () => {
  it('builds Nextcloud URLs itself', () => {
    expect(buildLinkUrl({ kind: 'file', fileId: '42' }, '')).toBe('/apps/files/?fileid=42');
    expect(buildLinkUrl({ kind: 'folder', path: '/A B/c&d' }, '')).toBe('/apps/files/?dir=%2FA+B%2Fc%26d');
    expect(buildLinkUrl({ kind: 'day', date: '2026-01-15' }, 'http://nc.test')).toBe('http://nc.test/apps/calendar/timeGridDay/2026-01-15');
  });
});
