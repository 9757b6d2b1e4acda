// Fuzz target: the egress gate's reading of what a branch sends it
// (egress/gate-proxy.ts on Node's HTTP parser, with policy.ts's CONNECT and
// absolute-URL parsers and address.ts). An input is the bytes a branch writes
// on one connection to its gate, which then half-closes. The gate asks this
// target instead of the helper: it refuses every request, except names that
// resolve (without DNS) to addresses the gate must refuse itself. Properties:
// - what the gate would send the helper over its IPC (FromGate) is valid: a
//   message the schema refuses would make the gate process throw and die;
// - what the gate asks about is a valid allow-list rule that reads back as
//   itself (a person may approve it "always");
// - the gate never asks about an address that reaches loopback, this host,
//   Grove's subnet, link-local or multicast (oracle.ts): those are refused
//   before anyone is asked;
// - an admitted name that resolves to such an address is refused (403) and
//   logged as denied; no response says anything but a refusal (or Node's
//   answer to an Expect header): nothing is let through;
// - the connection ends, and the gate holds none of the branch's connections after.
import net from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { GateProxy } from '../../../src/egress/gate-proxy.js';
import { FromGate, type Admission, type ProxyTarget } from '../../../src/egress/gate-protocol.js';
import { GATE_PORT } from '../../../src/host/branch-network.js';
import { formatRule, parseRule } from '../../../src/protocol/egress-rules.js';
import { EgressRule } from '../../../src/protocol/entities.js';
import { FUZZ_SUBNET } from '../grammar/addresses.js';
import { httpRequests, httpTokens, REFUSED_NAMES } from '../grammar/http.js';
import type { FuzzTarget } from '../engine.js';
import { namedAddress, reachesRefused, refusedAddresses } from '../oracle.js';

/** The gate listens on its own loopback address (not 127.0.0.1, which unit tests use), for one client address. */
const GATE_ADDRESS = '127.31.28.1';
const CLIENT_ADDRESS = '127.31.28.2';
const BRANCH = { id: 'fuzz0001', name: 'fuzz', treeId: 'fuzz0001', hostAddress: GATE_ADDRESS, containerAddress: CLIENT_ADDRESS };
/** The gate answers a half-closed connection at once; longer than this is a held connection. */
const ANSWER_TIMEOUT_MS = 5_000;
/** Refusals, and Node's own answers to an Expect header (100 Continue, 417 for one it does not know): never a 2xx (a tunnel or a response from somewhere) or a 502 (a connection tried). */
const ALLOWED_STATUS = new Set(['100', '400', '403', '417']);

const refused = refusedAddresses(FUZZ_SUBNET);
let gate: GateProxy | null = null;
/** What the gate did with the current input. */
let run = { asked: [] as ProxyTarget[], denied: [] as ProxyTarget[], wrong: [] as string[] };

export const gateHttpTarget: FuzzTarget = {
  name: 'gate-http',
  steers: (url) =>
    /\/privileged-helper\/src\/(egress\/(gate-proxy|policy|address)|protocol\/egress-rules)\.ts$/.test(url) ||
    /^node:_http_(server|common|incoming)$/.test(url),
  maxBytes: 1 << 16,
  grammar: httpRequests,
  tokens: httpTokens,
  setUp: async () => {
    gate = new GateProxy({ subnet: FUZZ_SUBNET, staticHosts: new Map(REFUSED_NAMES), admit, outcome, log: () => undefined });
    await gate.open(BRANCH);
  },
  tearDown: async () => {
    await gate?.close(BRANCH.id);
    gate = null;
  },
  run: async (input) => {
    run = { asked: [], denied: [], wrong: [] };
    const response = await exchange(input);
    if (run.wrong.length > 0) throw new Error(run.wrong.join('\n'));
    const statuses = [...response.matchAll(/(?:^|\r\n)HTTP\/\d\.\d (\d{3})/g)].map((m) => m[1]!);
    const odd = statuses.find((s) => !ALLOWED_STATUS.has(s));
    if (odd) throw new Error(`the gate answered ${odd}: ${JSON.stringify(response.slice(0, 300))}`);
    for (const target of run.asked.filter((t) => REFUSED_NAMES.has(t.host))) {
      if (!run.denied.includes(target)) throw new Error(`${target.host} resolves to ${REFUSED_NAMES.get(target.host)}, but the gate did not refuse it`);
    }
    await drained();
  },
};

/** The gate's question to the helper, answered as a policy that lets nothing out would (but the refused names). */
async function admit(branchId: string, target: ProxyTarget, method: string, gone: AbortSignal): Promise<Admission> {
  FromGate.parse({ type: 'admit', ask: 1, branchId, target, method }); // what the gate process sends the helper: it throws there too
  const rule = { host: target.host, port: target.port };
  if (!EgressRule.safeParse(rule).success || !isDeepStrictEqual(parseRule(formatRule(rule)), rule)) {
    run.wrong.push(`the gate asked about ${formatRule(rule)}, which a person could not put on the allow list as it is`);
  }
  const named = namedAddress(target.host);
  if (named && reachesRefused(named, refused))
    run.wrong.push(`the gate asked about ${target.host}, which reaches ${named.text}: it must refuse it before asking`);
  run.asked.push(target);
  if (REFUSED_NAMES.has(target.host)) return { ok: true };
  if (gone.aborted) return { ok: false, abandoned: true };
  return { ok: false, status: 403, message: 'fuzz: not on the allow list\n', verdict: 'denied' };
}

function outcome(branchId: string, target: ProxyTarget, method: string, verdict: 'denied' | 'failed', detail: string): void {
  FromGate.parse({ type: 'outcome', branchId, target, method, verdict, detail });
  if (verdict === 'denied') run.denied.push(target);
  else run.wrong.push(`the gate tried to connect to ${target.host}:${target.port}: ${detail}`);
}

/** Writes the input in pieces, half-closes, and reads the answer until the gate closes. */
async function exchange(input: Buffer): Promise<string> {
  const socket = net.connect({ host: GATE_ADDRESS, port: GATE_PORT, localAddress: CLIENT_ADDRESS });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined); // the gate may reset what it refuses
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  const held = new Promise<'held'>((resolve) => (timer = setTimeout(() => resolve('held'), ANSWER_TIMEOUT_MS)));
  try {
    await new Promise<void>((resolve) => socket.once('connect', resolve).once('close', resolve));
    for (let at = 0; at < input.length && !socket.destroyed; at += 1 + (at % 1499)) {
      socket.write(input.subarray(at, at + 1 + (at % 1499)));
      await nextTurn();
    }
    socket.end();
    if ((await Promise.race([closed, held])) === 'held')
      throw new Error(`the gate still held the connection ${ANSWER_TIMEOUT_MS} ms after the branch half-closed it`);
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
  return Buffer.concat(chunks).toString('latin1');
}

/** Waits until the gate counts no connection of the branch: one it keeps would count against the branch's limit for good. */
async function drained(): Promise<void> {
  const listener = (gate as unknown as { listeners: Map<string, { sockets: Set<unknown> }> }).listeners.get(BRANCH.id)!;
  const deadline = Date.now() + 1000;
  while (listener.sockets.size > 0) {
    if (Date.now() > deadline) {
      const kept = listener.sockets.size;
      for (const socket of listener.sockets as Set<net.Socket>) socket.destroy(); // the next input starts from none
      throw new Error(`the gate still counts ${kept} connection(s) of the branch after it closed them`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}
