// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { ApiError, GENERIC, parseErrorBody, retryHint, userMessage } from '../src/errors';
import { renderMarkdown } from '../src/markdown';

describe('a turn refused for the person\'s own share (429)', () => {
  it('says which limit and when to send again', () => {
    const body = '{"error":{"message":"You are sending messages faster than allowed. Wait a moment, then send again.","requestId":"r-7","retryAfter":4}}';
    expect(userMessage(new Error(body))).toBe(
      'You are sending messages faster than allowed. Wait a moment, then send again. You can send again in 4 seconds. (request id: r-7)',
    );
    const running = '{"error":{"message":"You already have several replies being written. Wait for one to finish, then send again.","requestId":"r-8","retryAfter":1}}';
    expect(userMessage(new Error(running))).toContain('You can send again in 1 second. (request id: r-8)');
  });
  it('ignores a retryAfter that is not a small positive integer', () => {
    for (const bad of ['"4"', '-1', '0', '1.5', '999999999', 'null']) {
      const body = `{"error":{"message":"Too many requests. Please wait a moment.","requestId":"r-1","retryAfter":${bad}}}`;
      expect(userMessage(new Error(body))).toBe('Too many requests. Please wait a moment. (request id: r-1)');
    }
    expect(retryHint(120)).toBe(' You can send again in 2 minutes.');
  });
});

describe('userMessage', () => {
  it('shows our fixed message only with a request id', () => {
    expect(userMessage(new ApiError(409, 'A reply is already being written in this conversation.', 'req-1'))).toBe(
      'A reply is already being written in this conversation. (request id: req-1)');
    expect(userMessage(new ApiError(500, 'secret internals', null))).toBe(GENERIC.failed);
  });
  it('reads an error body carried in an Error message', () => {
    expect(userMessage(new Error('{"error":{"message":"Not signed in.","requestId":"abc"}}'))).toBe('Not signed in. (request id: abc)');
  });
  it("shows the host's text for a refusal code, whatever the status would say", () => {
    // As the Nextcloud app answers the orchestrator's 409 message_id_taken (not "a reply is already being written").
    const body = '{"error":{"message":"Another message of this conversation already has this id. Send the message under a new id.","requestId":"r-4","code":"message_id_taken"}}';
    expect(userMessage(new Error(body))).toBe('Another message of this conversation already has this id. Send the message under a new id. (request id: r-4)');
    const undecided = '{"error":{"message":"Decide every approval this reply asked for, then send them together.","requestId":"r-5","code":"approvals_undecided"}}';
    expect(userMessage(new Error(undecided))).toBe('Decide every approval this reply asked for, then send them together. (request id: r-5)');
    expect(parseErrorBody(body).code).toBe('message_id_taken');
    expect(parseErrorBody('{"error":{"message":"x","requestId":"r","code":"<b>x</b>"}}').code).toBeNull();
    expect(parseErrorBody('{"error":{"message":"x","requestId":"r","code":7}}').code).toBeNull();
  });
  it('passes an SSE error part through', () => {
    expect(userMessage(new Error('Something went wrong. Please try again. (request id: r-9)'))).toBe('Something went wrong. Please try again. (request id: r-9)');
  });
  it('never shows raw exception text', () => {
    expect(userMessage(new Error('ECONNREFUSED 10.0.0.3:8700 at Socket.connect'))).toBe(GENERIC.failed);
    expect(userMessage(new TypeError('Failed to fetch'))).toBe(GENERIC.network);
    expect(userMessage('a string')).toBe(GENERIC.failed);
  });
});

describe('renderMarkdown', () => {
  it('renders markdown', () => {
    expect(renderMarkdown('**bold** and `code`')).toContain('<strong>bold</strong>');
  });
  it('escapes raw HTML from the model', () => {
    const html = renderMarkdown('<img src=x onerror=alert(1)><script>alert(1)</script>');
    expect(html).not.toMatch(/<img|<script/);
    expect(html).toContain('&lt;script&gt;');
  });
  it('drops javascript: links and hardens the rest', () => {
    for (const text of ['[x](javascript:alert(1))', '<a href="javascript:alert(1)">x</a>', '[x](JAVASCRIPT:alert(1))']) {
      const div = document.createElement('div');
      div.innerHTML = renderMarkdown(text);
      expect(div.querySelector('a')).toBeNull();
    }
    const link = renderMarkdown('[docs](https://example.org)');
    expect(link).toContain('rel="noopener noreferrer"');
    expect(link).toContain('target="_blank"');
  });
});
