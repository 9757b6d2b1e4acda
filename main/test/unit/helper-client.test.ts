// The helper client once its connection is gone: a request fails at once with
// why, instead of waiting forever for a reply no helper will send.
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { HelperClient } from '../../src/helper-client/client.js';
import { PROTOCOL_VERSION } from '../../../privileged-helper/src/protocol/methods.js';
import { ALICE } from './app-fixtures.js';

let dir: string | null = null;
let server: net.Server | null = null;

afterEach(async () => {
  server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  server = dir = null;
});

/** A socket that answers hello as a helper does, then does what `after` says with the connection. */
async function helperThatThen(after: (conn: net.Socket) => void): Promise<string> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'grove-client-'));
  const socketPath = path.join(dir, 'helper.sock');
  server = net.createServer((conn) => {
    conn.once('data', (line) => {
      const { id } = JSON.parse(line.toString()) as { id: number };
      const result = { protocol: PROTOCOL_VERSION, helperVersion: 'test', epoch: 'e1', capabilities: [], identity: ALICE };
      conn.write(`${JSON.stringify({ id, result })}\n`, () => after(conn));
    });
  });
  await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
  return socketPath;
}

describe('HelperClient', () => {
  it('fails a request made after the helper closed the connection, saying so', async () => {
    let closed!: () => void;
    const gone = new Promise<void>((resolve) => (closed = resolve));
    const client = await HelperClient.connect({ socketPath: await helperThatThen((conn) => conn.destroy()), name: 'test', kind: 'test' });
    client.onClose(closed);
    await gone;
    await expect(client.request('workspace.list', {})).rejects.toThrow('the connection to the helper closed');
  });

  it('fails a request that was waiting when the connection closed', async () => {
    let drop!: () => void;
    const client = await HelperClient.connect({ socketPath: await helperThatThen((conn) => (drop = () => conn.destroy())), name: 'test', kind: 'test' });
    const waiting = client.request('workspace.list', {});
    drop();
    await expect(waiting).rejects.toThrow('the connection to the helper closed');
  });

  it('fails a request made after the client itself closed', async () => {
    const client = await HelperClient.connect({ socketPath: await helperThatThen(() => undefined), name: 'test', kind: 'test' });
    client.close();
    await expect(client.request('workspace.list', {})).rejects.toThrow('this client closed its connection');
  });
});
