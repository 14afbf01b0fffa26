import { describe, expect, it } from 'vitest';
import { MAX_PREFILL, cleanPrefill, readPrefill, takePrefill } from '../src/prefill';

describe('the "Continue in Tamebi" prefill', () => {
  it('reads the question the Talk bot put into its link and drops it from the URL', () => {
    const href = 'https://cloud.example.com/apps/tamebi/?prefill=what%20is%20on%20my%20calendar%3F&x=1';
    expect(readPrefill(href)).toEqual({ text: 'what is on my calendar?', cleanUrl: 'https://cloud.example.com/apps/tamebi/?x=1' });
  });

  it('gives nothing (and leaves the URL alone) without one', () => {
    expect(readPrefill('https://cloud.example.com/apps/tamebi/')).toEqual({ text: '', cleanUrl: null });
    expect(readPrefill('not a url')).toEqual({ text: '', cleanUrl: null });
  });

  it('keeps line breaks, drops control and direction characters, bounds the length', () => {
    expect(cleanPrefill('a\nb\u0000c\u202ed\u200b ')).toBe('a\nbcd');
    expect(Array.from(cleanPrefill('é'.repeat(MAX_PREFILL + 10)))).toHaveLength(MAX_PREFILL);
  });

  it('takes it once: the address bar no longer carries it', () => {
    const calls: string[] = [];
    const win = {
      location: { href: 'https://cloud.example.com/apps/tamebi/?prefill=hello' } as Location,
      history: { state: null, replaceState: (_s: unknown, _t: string, url?: string | URL | null) => calls.push(String(url)) } as unknown as History,
    };
    expect(takePrefill(win)).toBe('hello');
    expect(calls).toEqual(['https://cloud.example.com/apps/tamebi/']);
  });
});
