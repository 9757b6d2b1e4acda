// `grove stream WS` as a person runs it: its URL, and requests to it that
// trust only the CA it wrote (--ca).
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { REPO } from './helper-process.js';

export interface StreamCommand {
  url: string;
  get(url: string, headers?: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>;
  /** The status a WebSocket upgrade of `urlPath` gets. */
  upgrade(urlPath: string, headers: Record<string, string>): Promise<number>;
  plainHttp(url: string): Promise<number>;
  stop(): Promise<void>;
}

export async function streamCommand(socketPath: string, workspace: string): Promise<StreamCommand> {
  const dir = await mkdtemp(path.join(tmpdir(), 'grove-stream-'));
  const caFile = path.join(dir, 'ca.pem');
  const cli = execa(path.join(REPO, 'main/bin/grove'), ['--socket', socketPath, 'stream', workspace, '--ca', caFile], { reject: false });
  const url = await new Promise<string>((resolve, reject) => {
    cli.stdout.on('data', (chunk: Buffer) => {
      const line = /^(https:\/\/\S+)$/m.exec(chunk.toString());
      if (line) resolve(line[1]!);
    });
    void cli.then((r) => reject(new Error(`grove stream ended: ${r.stderr}`)));
  });
  const ca = await readFile(caFile);
  const origin = new URL(url);
  const request = (options: https.RequestOptions) => https.request({ host: origin.hostname, port: origin.port, ca, ...options });
  return {
    url,
    get: (target, headers = {}) =>
      new Promise((resolve, reject) => {
        const u = new URL(target);
        request({ path: u.pathname + u.search, headers })
          .on('response', (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          })
          .on('error', reject)
          .end();
      }),
    upgrade: (urlPath, headers) =>
      new Promise((resolve, reject) => {
        const req = request({
          path: urlPath,
          headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
        });
        req.on('upgrade', (res, socket) => {
          socket.destroy();
          resolve(res.statusCode ?? 0);
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      }),
    plainHttp: (target) =>
      new Promise((resolve, reject) => {
        http.get(target.replace(/^https:/, 'http:'), (res) => resolve(res.statusCode ?? 0)).on('error', reject);
      }),
    stop: async () => {
      cli.kill('SIGTERM');
      await cli;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
