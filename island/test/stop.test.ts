import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api } from '../src/api';
import { stopReply } from '../src/chat';
import type { IslandConfig } from '../src/config';
import { ApiError } from '../src/errors';

const config = { apiBase: '/apps/tamebi/api', requestToken: 'tok-1' } as IslandConfig;

afterEach(() => vi.unstubAllGlobals());

describe('Stop', () => {
  it('lets the stream go first, then tells the server, for the conversation it was pressed in', async () => {
    const order: string[] = [];
    const known = await stopReply(
      'c-1',
      async () => { order.push('stream'); },
      async (id) => { order.push(`server ${id}`); },
    );
    expect(known).toBe(true);
    expect(order).toEqual(['stream', 'server c-1']);
  });

  it('takes a conversation the server does not know (the first message never reached it) as nothing to stop', async () => {
    expect(await stopReply('c-new', () => undefined, async () => { throw new ApiError(404, 'Not found.', 'r-1'); })).toBe(false);
  });

  it('passes any other failure on, after the stream was let go all the same', async () => {
    const stream = vi.fn();
    await expect(stopReply('c-1', stream, async () => { throw new ApiError(500, 'Something went wrong. Please try again.', 'r-2'); }))
      .rejects.toMatchObject({ status: 500 });
    expect(stream).toHaveBeenCalledOnce();
  });

  it('is a POST to the app\'s stop route with the CSRF token and no body', async () => {
    const fetch = vi.fn(async () => new Response(null, { status: 204 }));
    vi.stubGlobal('fetch', fetch);
    await new Api(config).stopChat('c 1/x');
    expect(fetch).toHaveBeenCalledOnce();
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('/apps/tamebi/api/chat/c%201%2Fx/stop');
    expect(init.method).toBe('POST');
    expect(init.body).toBeUndefined();
    expect(init.headers).toEqual({ requesttoken: 'tok-1' });
  });

  it('reports the server\'s 404 as an ApiError, which stopReply reads as nothing to stop', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response('{"error":{"message":"Not found.","requestId":"r-3"}}', { status: 404 })));
    const api = new Api(config);
    await expect(api.stopChat('gone')).rejects.toBeInstanceOf(ApiError);
    expect(await stopReply('gone', () => undefined, (id) => api.stopChat(id))).toBe(false);
  });
});
