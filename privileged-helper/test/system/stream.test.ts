// Each running branch's Selkies stream (docs/stream.md): served on a socket
// only root and the grove group may open, its streamer started when someone
// watches and ended when no one has for a while (GROVE_STREAM_IDLE_MS, 10 s
// here); each child of a fork streams its own screen, and a viewer follows a
// rollback and a promotion by itself, as Selkies's own client in Chromium
// draws it.
import { readFile, stat } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { execa } from 'execa';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { REPO } from './helper-process.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';
import { pixelsOf, startStreamServer, waitForPixels, watchStream, type Rgb } from './stream-viewer.js';
import { launchBrowser, START_PAGE_RGB } from './vnc-viewer.js';
import { streamCommand } from './stream-command.js';

const START_PAGE = START_PAGE_RGB as unknown as Rgb;
const MAGENTA: Rgb = [255, 0, 255];
/** A window over the whole screen, of a colour nothing else on the desktop has. */
const COVER_SCREEN = "DISPLAY=:0 setsid xterm -geometry 400x120+0+0 -bg '#ff00ff' </dev/null >/dev/null 2>&1 &";

function streamSocket(ws: Workspace): string {
  if (ws.streamSocket === null) throw new Error(`${ws.name} has no stream (it is ${ws.state})`);
  return ws.streamSocket;
}

/** The branch's streamer's own directory, in the stream socket's (stream/branch-streams.ts). */
function streamerDir(ws: Workspace): string {
  return path.join(path.dirname(streamSocket(ws)), ws.id);
}

/** The pid of the streamer listening on the branch's private socket, in its network namespace; null while none runs. */
async function streamerPid(ws: Workspace): Promise<number | null> {
  const { stdout } = await execa('nsenter', [`--net=/proc/${ws.pid}/ns/net`, '--', 'ss', '-Hlxp']);
  const line = stdout.split('\n').find((l) => l.includes(path.join(streamerDir(ws), 'selkies.sock')));
  const pid = /pid=(\d+)/.exec(line ?? '')?.[1];
  return pid === undefined ? null : Number(pid);
}

/** `waiting`, failing with the end of what the branch's streamer printed. */
async function shownWithLog<T>(ws: Workspace, waiting: Promise<T>): Promise<T> {
  try {
    return await waiting;
  } catch (err) {
    const log = await readFile(path.join(streamerDir(ws), 'selkies.log'), 'utf8').catch((e: Error) => e.message);
    throw new Error(`${(err as Error).message}\n${ws.name}'s streamer printed:\n${log.split('\n').slice(-30).join('\n')}`, { cause: err });
  }
}

describe("each branch's Selkies stream", () => {
  let client: HelperClient;
  let source: Workspace;
  let children: Workspace[] = [];
  let browser: Browser;
  let server: http.Server;
  const made: string[] = [];
  const url = (ws: Workspace) => `http://127.0.0.1:${(server.address() as { port: number }).port}/stream/${ws.id}/`;

  beforeAll(async () => {
    client = await connect();
    source = await createWorkspace(client, 'strm');
    made.push(source.id);
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    server?.close();
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id }).catch(() => undefined);
    client.close();
  });

  it('serves a new branch on a socket root:grove 0660, and starts no streamer before someone watches', async () => {
    const socket = streamSocket(source);
    expect((await execa('stat', ['-c', '%a %u %G', socket])).stdout).toBe('660 0 grove');
    expect((await execa('stat', ['-c', '%a %U %G', path.dirname(socket)])).stdout).toBe('751 root grove');
    await new Promise((r) => setTimeout(r, 3000));
    expect(await streamerPid(source)).toBeNull();
    expect(await stat(streamerDir(source)).catch(() => null)).toBeNull();
  });

  it("starts the streamer for the first viewer, outside the branch but in its namespaces, as its root, by no TCP port; it shows Chromium's start page", async () => {
    server = await startStreamServer({ [source.id]: streamSocket(source) });
    const page = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    await page.screenshot({ path: path.join(REPO, 'test-results/desktop-through-selkies.png') });
    const pid = await streamerPid(source);
    expect(pid, 'no streamer listens on its private socket').not.toBeNull();
    const hostRoot = Number((await readFile(`/proc/${source.pid}/uid_map`, 'utf8')).trim().split(/\s+/)[1]);
    // Its own directory: only its uid (and root) may enter it.
    expect((await execa('stat', ['-c', '%a %u', streamerDir(source)])).stdout).toBe(`700 ${hostRoot}`);
    // On its socket, on no TCP or UDP port in the branch or on the host.
    expect((await execa('nsenter', [`--net=/proc/${source.pid}/ns/net`, '--', 'ss', '-Hltunp'])).stdout).not.toContain(`pid=${pid},`);
    expect((await execa('ss', ['-Hltunp'])).stdout).not.toContain(`pid=${pid},`);
    for (const ns of ['ipc', 'net']) {
      const [own, branch] = (await execa('readlink', [`/proc/${pid}/ns/${ns}`, `/proc/${source.pid}/ns/${ns}`])).stdout.split('\n');
      expect(own, ns).toBe(branch);
    }
    expect((await execa('readlink', [`/proc/${pid}/ns/pid`])).stdout).toBe((await execa('readlink', ['/proc/self/ns/pid'])).stdout);
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(new RegExp(`^Uid:\\s+${hostRoot}\\s`, 'm'));
    expect(status).toMatch(/^CapEff:\s+0{16}$/m);
    await page.close();
  });

  it('is served by `grove stream` over HTTPS only with its token, to no foreign origin', async () => {
    const cli = await streamCommand(instance().socketPath, source.id);
    try {
      const base = new URL(cli.url);
      const noToken = `${base.origin}${base.pathname}`;
      // A certificate of Grove's own CA, for the loopback address.
      expect((await cli.get(noToken)).status).toBe(401);
      expect((await cli.get(`${noToken}?token=${'x'.repeat(43)}`)).status).toBe(401);
      const traded = await cli.get(cli.url);
      expect(traded.status).toBe(303);
      const cookie = /^(grove_token=[^;]+)/.exec(traded.headers['set-cookie']?.[0] ?? '')?.[1];
      expect(traded.headers['set-cookie']?.[0]).toMatch(/HttpOnly; SameSite=Strict; Path=\/; Secure/);
      const page = await cli.get(noToken, { cookie: cookie! });
      expect(page.status).toBe(200);
      expect(page.body).toContain('<title>Selkies</title>');
      expect(page.headers['content-security-policy']).toBe("frame-ancestors 'self'");
      const socketPath = `${base.pathname}api/websockets`;
      expect(await cli.upgrade(socketPath, { cookie: cookie!, origin: 'https://evil.example' })).toBe(401);
      expect(await cli.upgrade(socketPath, { origin: base.origin })).toBe(401);
      expect(await cli.upgrade(socketPath, { cookie: cookie!, origin: base.origin })).toBe(101);
      // Not over plain HTTP: the command serves nothing else.
      await expect(cli.plainHttp(noToken)).rejects.toThrow();
    } finally {
      await cli.stop();
    }
  });

  it('ends the streamer once no one has watched for the idle time, and starts it again for the next viewer', async () => {
    // Its directory goes once it has exited.
    await waitFor("the source's streamer to end", async () => (await stat(streamerDir(source)).catch(() => null)) === null, 40_000);
    expect(await streamerPid(source)).toBeNull();
    expect((await stat(streamSocket(source))).isSocket()).toBe(true);
    const page = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    expect(await streamerPid(source)).not.toBeNull();
    await page.close();
  });

  it('gives each child of a fork a stream of its own screen, started only when watched', async () => {
    const report = await client.request('branch.fork', { workspace: source.id, copies: 2 });
    children = await Promise.all(report.children.map(track));
    made.push(...children.map((c) => c.id));
    expect(new Set([source, ...children].map(streamSocket)).size).toBe(3);
    for (const child of children) expect(await streamerPid(child), child.name).toBeNull();
    server.close();
    server = await startStreamServer(Object.fromEntries([source, ...children].map((w) => [w.id, streamSocket(w)])));

    await sh(client, children[0]!, COVER_SCREEN);
    const covered = await shownWithLog(children[0]!, watchStream(browser, url(children[0]!), MAGENTA, 500_000));
    const sibling = await shownWithLog(children[1]!, watchStream(browser, url(children[1]!), START_PAGE, 50_000));
    const parent = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    expect(await pixelsOf(sibling, MAGENTA)).toBe(0);
    expect(await pixelsOf(parent, MAGENTA)).toBe(0);
    const streamers = await Promise.all([source, ...children].map(streamerPid));
    expect(new Set(streamers).size, streamers.join(' ')).toBe(3);
    for (const page of [covered, sibling, parent]) await page.close();
  });

  it('after a rollback, a viewer that was watching reconnects by itself to the restored desktop', async () => {
    const version = await client.request('branch.checkpoint', { workspace: source.id });
    const page = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    await sh(client, source, COVER_SCREEN);
    await shownWithLog(source, waitForPixels(page, MAGENTA, 500_000));
    const before = await streamerPid(source);
    const rolled = await track(await client.request('branch.rollback', { workspace: source.id, version: version.id }));
    expect(rolled.pid).not.toBe(source.pid);
    expect(rolled.streamSocket).toBe(source.streamSocket);
    source = rolled;
    // The same page, never reloaded by the test: Selkies's client reconnects, and the helper starts a streamer of the restored processes.
    await shownWithLog(source, waitForPixels(page, START_PAGE, 50_000, 120_000));
    expect(await pixelsOf(page, MAGENTA)).toBe(0);
    const after = await streamerPid(source);
    expect(after).not.toBeNull();
    expect(after).not.toBe(before);
    await page.close();
  });

  it("keeps the promoted branch's stream and its viewer through a promotion", async () => {
    const child = children[0]!;
    const page = await shownWithLog(child, watchStream(browser, url(child), MAGENTA, 500_000));
    const before = await streamerPid(child);
    const promoted = await track(await client.request('branch.promote', { workspace: child.id, oldMain: 'keep' }));
    expect(promoted.main).toBe(true);
    expect(promoted.streamSocket).toBe(child.streamSocket);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await pixelsOf(page, MAGENTA)).toBeGreaterThan(500_000);
    expect(await streamerPid(promoted)).toBe(before);
    // The old main, kept as a branch, streams its own screen still.
    const oldMain = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    expect(await pixelsOf(oldMain, MAGENTA)).toBe(0);
    for (const p of [page, oldMain]) await p.close();
  });

  it('ends the stream with its branch', async () => {
    const child = children[1]!;
    await client.request('workspace.delete', { workspace: child.id });
    made.splice(made.indexOf(child.id), 1);
    expect(await stat(streamSocket(child)).catch(() => null)).toBeNull();
  });
});
