// The egress gate's own process (`daemon.ts --gate`), spawned by the helper as
// an unprivileged user: it serves every branch's proxy listener and asks the
// helper, over the IPC channel, whether each request may pass. It holds no
// privilege, no registry and no socket of the helper's; if it dies, nothing
// listens on the branches' gate address, so their traffic stops (fails closed)
// until the helper starts it again.
import { FromGate, ToGate, type Admission } from './gate-protocol.js';
import { GateProxy } from './gate-proxy.js';
import { parseHostsMap } from './policy.js';

const log = (msg: string) => process.stderr.write(`[grove-gate] ${msg}\n`);

export function runGateProcess(): void {
  if (process.getuid?.() === 0) throw new Error('the egress gate must not run as root');
  const send = process.send?.bind(process);
  if (!send) throw new Error('the egress gate runs only as the helper’s child (it needs the IPC channel)');
  const tell = (m: FromGate) => send(FromGate.parse(m));
  const waiting = new Map<number, (a: Admission) => void>();
  let asks = 0;
  const proxy = new GateProxy({
    subnet: requiredEnv('GROVE_SUBNET'),
    staticHosts: parseHostsMap(process.env.GROVE_GATE_HOSTS),
    admit: (branchId, target, method, gone) =>
      new Promise<Admission>((resolve) => {
        const ask = ++asks;
        waiting.set(ask, resolve);
        gone.addEventListener('abort', () => waiting.has(ask) && tell({ type: 'gone', ask }));
        tell({ type: 'admit', ask, branchId, target, method });
      }),
    outcome: (branchId, target, method, verdict, detail) => tell({ type: 'outcome', branchId, target, method, verdict, detail }),
    log,
  });
  process.on('message', (raw: unknown) => {
    const parsed = ToGate.safeParse(raw);
    if (!parsed.success) return log(`ignored a malformed message from the helper: ${parsed.error.message}`);
    const m = parsed.data;
    if (m.type === 'admission') {
      waiting.get(m.ask)?.(m.admission);
      waiting.delete(m.ask);
    } else if (m.type === 'open') {
      proxy.open(m.branch).then(
        () => tell({ type: 'opened', branchId: m.branch.id, error: null }),
        (err: Error) => tell({ type: 'opened', branchId: m.branch.id, error: err.message }),
      );
    } else {
      void proxy.close(m.branchId);
    }
  });
  // The helper is gone: so is every decision this process could ask for.
  process.on('disconnect', () => process.exit(0));
  tell({ type: 'ready' });
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
