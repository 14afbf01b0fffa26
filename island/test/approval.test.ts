import { describe, expect, it } from 'vitest';
import { approvalTarget, impliedTarget } from '../src/approval';

describe('approvalTarget names the server the arguments go to', () => {
  it('one of ours', () => {
    expect(approvalTarget({ toolName: 'files_write', toolMetadata: { server: 'nextcloud', tool: 'files_write', thirdParty: false } })).toEqual({
      server: 'nextcloud',
      tool: 'files_write',
      thirdParty: false,
    });
  });
  it('a third party, under its own tool name when the model calls it by another', () => {
    expect(approvalTarget({ toolName: 'weather__today', toolMetadata: { server: 'weather', tool: 'today', thirdParty: true } })).toEqual({
      server: 'weather',
      tool: 'today',
      thirdParty: true,
    });
  });
});

describe('approvalTarget fails closed', () => {
  for (const toolMetadata of [undefined, null, 'nextcloud', [], {}, { server: '' }, { server: 7, thirdParty: false }, { thirdParty: false }]) {
    it(`unknown server: ${JSON.stringify(toolMetadata)}`, () => {
      expect(approvalTarget({ toolName: 'x', toolMetadata })).toEqual({ server: null, tool: 'x', thirdParty: true });
    });
  }
  it('a server that does not say it is ours is a third party', () => {
    expect(approvalTarget({ toolName: 'x', toolMetadata: { server: 'w' } }).thirdParty).toBe(true);
    expect(approvalTarget({ toolName: 'x', toolMetadata: { server: 'w', thirdParty: 'false' } }).thirdParty).toBe(true);
  });
});

// The same examples as mcp-nextcloud's `the_default_target_is_beside_the_source` (tools/convert.rs):
// the card must name the path the server will write.
describe('impliedTarget names what files_convert writes when target is left out', () => {
  it('beside the source, with the new extension', () => {
    expect(impliedTarget('files_convert', { path: 'Contracts/Customer AG.docx', to: 'pdf' })).toBe('Contracts/Customer AG.pdf');
    expect(impliedTarget('files_convert', { path: '/Contracts/Customer AG.docx', to: ' .PDF' })).toBe('Contracts/Customer AG.pdf');
    expect(impliedTarget('files_convert', { path: 'README', to: 'pdf' })).toBe('README.pdf');
    expect(impliedTarget('files_convert', { path: 'a.tar.gz', to: 'txt' })).toBe('a.tar.txt');
  });
  it('nothing to add when the arguments name the target, or for other tools', () => {
    expect(impliedTarget('files_convert', { path: 'a.docx', to: 'pdf', target: 'Out/c.pdf' })).toBeNull();
    expect(impliedTarget('files_write', { path: 'a.docx', to: 'pdf' })).toBeNull();
    expect(impliedTarget('files_convert', { path: 7, to: 'pdf' })).toBeNull();
    expect(impliedTarget('files_convert', null)).toBeNull();
    expect(impliedTarget('files_convert', { path: '/', to: 'pdf' })).toBeNull();
  });
});
