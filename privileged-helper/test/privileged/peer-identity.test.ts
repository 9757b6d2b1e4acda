// The peer-credentials addon against real Unix sockets (built by build/host/setup.sh).
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { identify, loadPeerCredentials, roleOf, type PeerCredentials } from '../../src/auth/peer-identity.js';
import { loadConfig } from '../../src/config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'grove-peer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Connects to a fresh socket and returns what the server side reads of its peer. */
async function credentialsOfSelf(): Promise<PeerCredentials> {
  const read = loadPeerCredentials(loadConfig().peercredAddon);
  const file = path.join(dir, `s${Math.random().toString(16).slice(2)}.sock`);
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => {
      try {
        resolve(read(socket));
      } catch (err) {
        reject(err as Error);
      } finally {
        socket.destroy();
        server.close();
      }
    });
    server.listen(file, () => net.connect(file).on('error', () => undefined));
  });
}

describe('peer identity', () => {
  it("reads this process's own pid, uid, gid and groups from the kernel", async () => {
    const cred = await credentialsOfSelf();
    expect(cred).toEqual({ pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), groups: expect.any(Array) });
    // Node's getgroups() adds the effective gid to the supplementary groups; the kernel's list may not hold it.
    expect(new Set([...cred.groups, cred.gid])).toEqual(new Set(process.getgroups!()));
  });

  it('refuses to start without the addon, saying how to build it', () => {
    expect(() => loadPeerCredentials('/nonexistent/peercred.node')).toThrow(/run build\/host\/setup.sh/);
  });

  const groups = { person: 990, agent: 991 };
  const cred = (over: Partial<PeerCredentials>): PeerCredentials => ({ pid: 1, uid: 1000, gid: 1000, groups: [], ...over });

  it('makes root and the grove group persons on the person socket, and nobody else', () => {
    expect(roleOf('person', cred({ uid: 0, gid: 0 }), groups)).toBe('person');
    expect(roleOf('person', cred({ gid: 990 }), groups)).toBe('person');
    expect(roleOf('person', cred({ groups: [5, 990] }), groups)).toBe('person');
    expect(roleOf('person', cred({ groups: [991] }), groups)).toBeNull();
    expect(roleOf('person', cred({}), groups)).toBeNull();
  });

  it('makes everyone allowed on the agent socket an agent, persons included', () => {
    expect(roleOf('agent', cred({ groups: [991] }), groups)).toBe('agent');
    expect(roleOf('agent', cred({ uid: 0, gid: 0 }), groups)).toBe('agent');
    expect(roleOf('agent', cred({ groups: [990] }), groups)).toBe('agent');
    expect(roleOf('agent', cred({}), groups)).toBeNull();
  });

  it('names the user and the process', async () => {
    const actor = await identify('person', await credentialsOfSelf(), groups);
    expect(actor).toMatchObject({ role: 'person', uid: 0, user: 'root', pid: process.pid, client: '' });
    expect(actor!.process.length).toBeGreaterThan(0);
    expect(await identify('person', cred({ uid: 4_000_000 }), groups)).toBeNull();
    expect((await identify('agent', cred({ uid: 4_000_000, groups: [991] }), groups))?.user).toBe('#4000000');
  });
});
