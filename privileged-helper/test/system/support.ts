// Helpers shared by the system tests.
import { appendFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { PNG } from 'pngjs';
import { inject } from 'vitest';
import { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Region } from '../../src/protocol/desktop.js';
import type { Workspace } from '../../src/protocol/entities.js';
import type { RfbEndpoint } from '../../src/desktop/rfb-probe.js';
import { testInstance } from './helper-process.js';
import { pidNamespaceOf } from './leftovers.js';
import { until } from '../until.js';

declare module 'vitest' {
  export interface ProvidedContext {
    groveInstance: string;
  }
}

export const instance = () => testInstance(inject('groveInstance'));

export function connect(name = 'system-test'): Promise<HelperClient> {
  return HelperClient.connect({ socketPath: instance().socketPath, name, kind: 'test' });
}

/** Remembers a running workspace's pid namespace so teardown can prove no process of it survived. */
export async function track(ws: Workspace): Promise<Workspace> {
  if (ws.pid !== null) await appendFile(instance().pidNsFile, `${await pidNamespaceOf(ws.pid)}\n`);
  return ws;
}

export async function createWorkspace(client: HelperClient, name: string, ports?: number[]): Promise<Workspace> {
  return track(await client.request('workspace.create', ports ? { name, ports } : { name }));
}

export function hostPort(ws: Workspace, containerPort: number): number {
  const mapping = ws.ports.find((p) => p.containerPort === containerPort);
  if (!mapping) throw new Error(`workspace ${ws.name} maps no port ${containerPort}`);
  return mapping.hostPort;
}

/** The socket a running workspace's desktop is served on. */
export function vncSocket(ws: Workspace): string {
  if (ws.vncSocket === null) throw new Error(`workspace ${ws.name} serves no desktop (it is ${ws.state})`);
  return ws.vncSocket;
}

/** Runs a command and fails the test with its output if it does not exit 0. */
export async function sh(client: HelperClient, ws: Workspace, script: string): Promise<string> {
  const res = await client.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', script], timeoutMs: 60_000 });
  if (res.exitCode !== 0) throw new Error(`'${script}' exited ${res.exitCode}: ${res.stderr}${res.stdout}`);
  return res.stdout;
}

/** GET on 127.0.0.1:port, retried while the server inside is still starting. */
export async function httpGet(port: number, timeoutMs = 30_000, urlPath = '/'): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await new Promise<string>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: urlPath, timeout: 3000 }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', reject);
      });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

/** Waits until something accepts at the endpoint and sends its first bytes (e.g. an RFB banner). */
export async function banner(at: RfbEndpoint, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await new Promise<string | null>((resolve) => {
      const s = net.connect(at);
      const timer = setTimeout(() => (s.destroy(), resolve(null)), 2000);
      s.once('data', (d) => (clearTimeout(timer), s.destroy(), resolve(d.toString('latin1'))));
      s.on('error', () => (clearTimeout(timer), resolve(null)));
      s.on('close', () => (clearTimeout(timer), resolve(null)));
    });
    if (text) return text;
    if (Date.now() > deadline) throw new Error(`nothing answered at ${JSON.stringify(at)} within ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Polls until `ready` says yes (setup has no expect.poll). */
export async function waitFor(what: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await until(ready, { what, timeoutMs, everyMs: 250 });
}

/** Where the standard desktop's editor (mousepad, bottom right) is, and its text area below its menu and warning bar. */
export const EDITOR = { x: 1060, y: 640 };
export const EDITOR_TEXT: Region = { x: 860, y: 480, width: 410, height: 300 };

/** How many pixels of a region of the branch's screen are dark (text, FULL BLOCK characters): a measure of what is written there. */
export async function darkPixels(client: HelperClient, ws: Workspace, region: Region): Promise<number> {
  const s = await client.request('desktop.screenshot', { workspace: ws.id, region });
  const png = PNG.sync.read(Buffer.from(s.png, 'base64'));
  let dark = 0;
  for (let i = 0; i < png.data.length; i += 4) if (png.data[i]! + png.data[i + 1]! + png.data[i + 2]! < 150) dark++;
  return dark;
}

/**
 * How dark the editor's empty text area is, once the editor's window is on its tile: until then the area shows the
 * black root window. The session places the editor whenever it maps, which on a loaded host can take many seconds.
 */
export async function blankEditor(client: HelperClient, ws: Workspace): Promise<number> {
  const area = EDITOR_TEXT.width * EDITOR_TEXT.height;
  let dark = area;
  await waitFor('the editor on its tile', async () => (dark = await darkPixels(client, ws, EDITOR_TEXT)) < area / 2, 60_000);
  return dark;
}

/** The ids the pool holds ready, once it holds as many as it keeps. */
export async function fullPool(c: HelperClient): Promise<string[]> {
  let ready: string[] = [];
  await waitFor(
    'the networks prepared ahead',
    async () => {
      const { prepared } = await c.request('perf.get', {});
      ready = prepared.ready;
      return ready.length === prepared.kept;
    },
    30_000,
  );
  return ready;
}
