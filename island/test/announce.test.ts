import { describe, expect, it } from 'vitest';
import { nextAnnouncement, sentenceEnd } from '../src/announce';

describe('streamed replies are announced in sentences', () => {
  it('waits for a sentence to end', () => {
    expect(nextAnnouncement('Here is your wee', 0, false)).toEqual({ say: '', upTo: 0 });
    expect(nextAnnouncement('Here is your week. It has', 0, false)).toEqual({ say: 'Here is your week.', upTo: 19 });
    expect(nextAnnouncement('Here is your week. It has three events! And', 19, false)).toEqual({ say: 'It has three events!', upTo: 40 });
  });

  it('says the rest when the reply ends, and nothing twice', () => {
    const text = 'One. Two';
    const first = nextAnnouncement(text, 0, false);
    expect(first.say).toBe('One.');
    expect(nextAnnouncement(text, first.upTo, true)).toEqual({ say: 'Two', upTo: text.length });
    expect(nextAnnouncement(text, text.length, true).say).toBe('');
  });

  it('takes a blank line as a boundary (lists, paragraphs)', () => {
    expect(sentenceEnd('- a\n- b\n\nNext', 0)).toBe(9);
  });
});
