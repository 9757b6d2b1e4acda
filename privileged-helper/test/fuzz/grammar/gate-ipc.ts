// A grammar of the JSON messages on the IPC channel between the helper and
// its egress gate (egress/gate-protocol.ts): every message type of both
// directions, with fields missing, of the wrong type, at and past their
// bounds, and keys the schema does not know. The gate parses what branches
// send, so the helper takes what it says as possibly hostile.
import fc from 'fast-check';
import { addressLiteral } from './addresses.js';

const text = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.constantFrom(
    '',
    'abcd0123',
    'CONNECT',
    'GET',
    'x'.repeat(32),
    'x'.repeat(33),
    'x'.repeat(255),
    'x'.repeat(256),
    'x'.repeat(2001),
    '__proto__',
    'constructor',
  ),
  addressLiteral,
);
const number = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 1, 65535, 65536, 1.5, -0, 1e308, Number.MAX_SAFE_INTEGER + 2));
const anyValue = fc.oneof(text, number, fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
const field = <T>(usual: fc.Arbitrary<T>) => fc.oneof({ arbitrary: usual, weight: 6 }, { arbitrary: anyValue, weight: 1 });

const target = fc.record(
  { host: field(text), port: field(fc.oneof(fc.integer({ min: 0, max: 70000 }), number)), path: field(fc.option(text)), url: field(fc.option(text)) },
  { requiredKeys: [] },
);
const branch = fc.record(
  { id: field(text), name: field(text), treeId: field(text), hostAddress: field(text), containerAddress: field(text) },
  { requiredKeys: [] },
);
const admission = fc.oneof(
  fc.record({ ok: field(fc.constant(true)) }),
  fc.record(
    { ok: field(fc.constant(false)), status: field(number), message: field(text), verdict: field(fc.constantFrom('denied', 'rejected', 'timeout', 'allowed')) },
    { requiredKeys: [] },
  ),
  fc.record({ ok: field(fc.constant(false)), abandoned: field(fc.constant(true)) }),
);

const message = fc.record(
  {
    type: field(fc.constantFrom('ready', 'opened', 'admit', 'gone', 'outcome', 'open', 'close', 'admission', 'other')),
    ask: field(number),
    branchId: field(text),
    branch: field(branch),
    target: field(target),
    method: field(text),
    verdict: field(fc.constantFrom('denied', 'failed', 'allowed')),
    detail: field(text),
    error: field(fc.option(text)),
    admission: field(admission),
    extra: anyValue,
  },
  { requiredKeys: [] },
);

/** One message as JSON text, the IPC channel's serialization. */
export const gateMessages: fc.Arbitrary<Uint8Array> = message.map((m) => Buffer.from(JSON.stringify(m)));

export const gateMessageTokens: readonly Uint8Array[] = [
  '"__proto__":{"type":"ready"},',
  '"constructor":{"prototype":{"polluted":true}},',
  '"type":"admit",',
  '"type":"outcome",',
  '"target":{"host":"example.test","port":443,"path":null,"url":null},',
  '{"a":',
  '[',
  '1e400',
  '"\\u0000"',
  '"\\ud800"',
].map((t) => Buffer.from(t));
