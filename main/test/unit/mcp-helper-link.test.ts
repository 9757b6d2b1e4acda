// The MCP server's one helper connection: made on first use, shared, and made
// again after it drops or fails to connect.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { GroveError, type HelperClient } from '../../src/helper-client/client.js';
import { HelperLink } from '../../src/mcp/helper-link.js';
import { ALICE } from './app-fixtures.js';

/** Enough of a HelperClient for the link: hello, a request that says which connection answered, and a close event. */
function fakeClient(n: number) {
  const events = new EventEmitter();
  const client = {
    socketPath: '/run/test.sock',
    hello: { identity: ALICE },
    request: async () => n,
    onClose: (listener: () => void) => events.on('close', listener),
    close: () => events.emit('close'),
  };
  return client as unknown as HelperClient;
}

describe('HelperLink', () => {
  it('shares one connection, and connects again after it closed or failed', async () => {
    const made: HelperClient[] = [];
    let refuse = false;
    const link = new HelperLink(
      async () => {
        if (refuse) throw new GroveError('E_PRECONDITION', 'the Grove helper is not running');
        made.push(fakeClient(made.length + 1));
        return made.at(-1)!;
      },
      () => undefined,
    );
    const which = () => link.use((h) => h.request('workspace.list', {}) as unknown as Promise<number>);

    expect(await Promise.all([which(), which()])).toEqual([1, 1]);
    expect(await link.use(async (h) => h.identity)).toEqual(ALICE);
    made[0]!.close(); // the helper went away
    refuse = true;
    await expect(which()).rejects.toThrow('not running');
    refuse = false;
    expect(await which()).toBe(2);
    expect(await which()).toBe(2);
    expect(made).toHaveLength(2);
  });
});
