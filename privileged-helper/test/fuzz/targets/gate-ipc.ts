// Fuzz target: the contract of the IPC channel between the root helper and its
// unprivileged egress gate (egress/gate-protocol.ts), and what the helper does
// with an 'admit' or 'outcome' it accepts (policy.ts: decide, the allow-list
// edit of an "always" approval). The gate parses what branches send, so a
// gate a branch has subverted may say anything. An input is one message as
// JSON text, the channel's serialization. Properties:
// - validating a message never throws, whatever the JSON, and pollutes no prototype;
// - an accepted message survives the channel's JSON round trip unchanged;
// - deciding an accepted request under any policy, and adding its target to
//   an allow list, never throws.
import { isDeepStrictEqual } from 'node:util';
import { FromGate, ToGate } from '../../../src/egress/gate-protocol.js';
import { decide, editAllowList, isMutating } from '../../../src/egress/policy.js';
import { formatRule } from '../../../src/protocol/egress-rules.js';
import type { EgressPolicy } from '../../../src/protocol/entities.js';
import type { FuzzTarget } from '../engine.js';
import { gateMessages, gateMessageTokens } from '../grammar/gate-ipc.js';

const POLICIES: EgressPolicy[] = [
  { mode: 'deny', allow: [], holdMutating: false },
  { mode: 'allow', allow: [{ host: '*.example.test' }, { host: '127.0.0.1', port: 80 }, { host: '::1' }], holdMutating: true },
  { mode: 'gate', allow: [{ host: 'example.test', port: 443 }], holdMutating: false },
];
const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype).length;

export const gateIpcTarget: FuzzTarget = {
  name: 'gate-ipc',
  steers: (url) =>
    /\/privileged-helper\/src\/(egress\/(gate-protocol|policy|address)|protocol\/egress-rules)\.ts$/.test(url) || url.includes('/node_modules/zod/'),
  maxBytes: 1 << 14,
  grammar: gateMessages,
  tokens: gateMessageTokens,
  setUp: async () => undefined,
  tearDown: async () => undefined,
  run: async (input) => {
    let value: unknown;
    try {
      value = JSON.parse(input.toString('utf8'));
    } catch {
      return; // the channel delivers JSON values only
    }
    for (const schema of [FromGate, ToGate]) {
      const parsed = schema.safeParse(value);
      if (!parsed.success) continue;
      const again = schema.safeParse(JSON.parse(JSON.stringify(parsed.data)));
      if (!again.success || !isDeepStrictEqual(again.data, parsed.data))
        throw new Error(`an accepted message changes across the channel: ${JSON.stringify(parsed.data).slice(0, 300)}`);
      const m = parsed.data;
      if ('target' in m && 'method' in m) {
        for (const policy of POLICIES) decide(policy, { host: m.target.host, port: m.target.port, method: m.method });
        isMutating(m.method);
        formatRule(m.target);
        editAllowList(POLICIES[1]!.allow, [{ host: m.target.host, port: m.target.port }], []);
      }
    }
    if (Object.getOwnPropertyNames(Object.prototype).length !== PROTOTYPE_KEYS) throw new Error('validating a message changed Object.prototype');
  },
};
