// The egress tests' "outside world" (system egress.test.ts and the app's
// e2e/egress.spec.ts): a network namespace of the test's own with a veth to
// the host, a default route back through it, and fixtures/outside-server.py
// serving on its address. Nothing beyond this machine is contacted.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

const SERVER = path.join(import.meta.dirname, 'fixtures/outside-server.py');

export interface OutsidePlan {
  ns: string;
  veth: string;
  /** The host's end of the /30. */
  hostSide: string;
  /** The server's address. */
  address: string;
}

/** Inside a branch: one request through the gate (urllib, proxy from the environment); argv METHOD URL; prints {status, body} as JSON. */
export const FETCH_THROUGH_GATE = `
import json, sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, method=method, data=(b'payload' if method in ('POST', 'PUT') else None))
try:
    with urllib.request.urlopen(req, timeout=150) as r:
        print(json.dumps({'status': r.status, 'body': r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({'status': e.code, 'body': e.read().decode()}))
except Exception as e:
    print(json.dumps({'status': 0, 'body': repr(e)}))
`;

export class OutsideWorld {
  private output = '';

  private constructor(
    readonly plan: OutsidePlan,
    private readonly server: ChildProcess,
  ) {
    const append = (d: Buffer) => (this.output += d.toString());
    server.stdout!.on('data', append);
    server.stderr!.on('data', append);
    server.on('exit', (code, signal) => (this.output += `\nEXITED ${code ?? signal}\n`));
    server.on('error', (err) => (this.output += `\nERROR ${err.message}\n`));
  }

  /** Makes the namespace (removing a stale one first) and waits until the server listens. */
  static async start(plan: OutsidePlan): Promise<OutsideWorld> {
    await removeOutsideWorld(plan);
    const { ns, veth } = plan;
    await execa('ip', ['netns', 'add', ns]);
    await execa('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await execa('ip', ['addr', 'add', `${plan.hostSide}/30`, 'dev', veth]);
    await execa('ip', ['link', 'set', veth, 'up']);
    await execa('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    await execa('ip', ['-n', ns, 'addr', 'add', `${plan.address}/30`, 'dev', 'eth0']);
    await execa('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await execa('ip', ['-n', ns, 'route', 'add', 'default', 'via', plan.hostSide]);
    const world = new OutsideWorld(plan, spawn('ip', ['netns', 'exec', ns, 'python3', '-u', SERVER, plan.address], { stdio: ['ignore', 'pipe', 'pipe'] }));
    for (let i = 0; i < 300 && !/READY|EXITED|ERROR/.test(world.output); i++) await sleep(100);
    if (!world.output.includes('READY')) {
      await world.stop();
      throw new Error(`the outside server did not start:\n${world.output}`);
    }
    return world;
  }

  /** Everything the server printed: READY, then a HIT or UDP line per request that reached it. */
  get log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    this.server.kill('SIGTERM');
    await removeOutsideWorld(this.plan);
  }
}

/** Ends whatever still runs in the namespace and removes it and its veth (idempotent: also a backstop). */
export async function removeOutsideWorld(plan: Pick<OutsidePlan, 'ns' | 'veth'>): Promise<void> {
  const pids = await execa('ip', ['netns', 'pids', plan.ns], { reject: false });
  for (const pid of pids.stdout
    .split('\n')
    .map(Number)
    .filter((n) => n > 1)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await execa('ip', ['netns', 'del', plan.ns], { reject: false });
  await execa('ip', ['link', 'del', plan.veth], { reject: false });
}
