import { describe, expect, it } from 'vitest';
import { approvalTarget } from '../src/approval';

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
