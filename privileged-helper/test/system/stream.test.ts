// Each running branch's Selkies stream (docs/stream.md): served on a socket
// only root and the grove group may open, started for a new branch and for
// each child of a fork, and showing that branch's own screen, as Selkies's
// own client in Chromium draws it.
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
import { pixelsOf, startStreamServer, watchStream, type Rgb } from './stream-viewer.js';
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

/** Once the socket is there and open to the grove group. */
async function streamReady(ws: Workspace): Promise<void> {
  await shownWithLog(
    ws,
    waitFor(`${ws.name}'s stream socket`, async () => ((await stat(streamSocket(ws)).catch(() => null))?.mode ?? 0) === 0o140660, 60_000),
  );
}

/** `waiting`, failing with the end of what the branch's streamer printed. */
async function shownWithLog<T>(ws: Workspace, waiting: Promise<T>): Promise<T> {
  try {
    return await waiting;
  } catch (err) {
    const log = await readFile(path.join(path.dirname(streamSocket(ws)), 'selkies.log'), 'utf8').catch((e: Error) => e.message);
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

  it("serves a new branch on a socket root:grove 0660 in a 0750 directory of its streamer's and grove's, by no TCP port", async () => {
    await streamReady(source);
    const socket = streamSocket(source);
    const { stdout } = await execa('stat', ['-c', '%a %u %G', socket, path.dirname(socket)]);
    const hostRoot = Number((await readFile(`/proc/${source.pid}/uid_map`, 'utf8')).trim().split(/\s+/)[1]);
    expect(stdout.split('\n')).toEqual(['660 0 grove', `750 ${hostRoot} grove`]);
    expect((await execa('stat', ['-c', '%a %U %G', path.dirname(path.dirname(socket))])).stdout).toBe('751 root grove');
    // It listens in the branch's network namespace: on its socket, on no TCP or UDP port there or on the host.
    const inBranch = ['nsenter', `--net=/proc/${source.pid}/ns/net`, '--', 'ss'];
    const streamer = (await execa(inBranch[0]!, [...inBranch.slice(1), '-Hlxp'])).stdout.split('\n').find((line) => line.includes(socket));
    const pid = /pid=(\d+)/.exec(streamer ?? '')?.[1];
    expect(pid, `nothing listens on ${socket}`).toBeDefined();
    expect((await execa(inBranch[0]!, [...inBranch.slice(1), '-Hltunp'])).stdout).not.toContain(`pid=${pid},`);
    expect((await execa('ss', ['-Hltunp'])).stdout).not.toContain(`pid=${pid},`);
    // Outside the branch but in its IPC and network namespaces, without capabilities.
    for (const ns of ['ipc', 'net']) {
      const [own, branch] = (await execa('readlink', [`/proc/${pid}/ns/${ns}`, `/proc/${source.pid}/ns/${ns}`])).stdout.split('\n');
      expect(own, ns).toBe(branch);
    }
    expect((await execa('readlink', [`/proc/${pid}/ns/pid`])).stdout).toBe((await execa('readlink', ['/proc/self/ns/pid'])).stdout);
    // As the branch's own root, without capabilities.
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(new RegExp(`^Uid:\\s+${hostRoot}\\s`, 'm'));
    expect(status).toMatch(/^CapEff:\s+0{16}$/m);
  });

  it("shows the branch's desktop, Chromium's start page, in Selkies's client", async () => {
    server = await startStreamServer({ [source.id]: streamSocket(source) });
    const page = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    await page.screenshot({ path: path.join(REPO, 'test-results/desktop-through-selkies.png') });
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

  it("starts a stream for each child of a fork, each of its own screen, while the source's goes on", async () => {
    const report = await client.request('branch.fork', { workspace: source.id, copies: 2 });
    children = await Promise.all(report.children.map(track));
    made.push(...children.map((c) => c.id));
    for (const child of children) await streamReady(child);
    expect(new Set([source, ...children].map(streamSocket)).size).toBe(3);
    server.close();
    server = await startStreamServer(Object.fromEntries([source, ...children].map((w) => [w.id, streamSocket(w)])));

    await sh(client, children[0]!, COVER_SCREEN);
    const covered = await shownWithLog(children[0]!, watchStream(browser, url(children[0]!), MAGENTA, 500_000));
    const sibling = await shownWithLog(children[1]!, watchStream(browser, url(children[1]!), START_PAGE, 50_000));
    const parent = await shownWithLog(source, watchStream(browser, url(source), START_PAGE, 50_000));
    expect(await pixelsOf(sibling, MAGENTA)).toBe(0);
    expect(await pixelsOf(parent, MAGENTA)).toBe(0);
    for (const page of [covered, sibling, parent]) await page.close();
  });

  it('ends the stream with its branch', async () => {
    const child = children[1]!;
    await client.request('workspace.delete', { workspace: child.id });
    made.splice(made.indexOf(child.id), 1);
    expect(await stat(streamSocket(child)).catch(() => null)).toBeNull();
  });
});
