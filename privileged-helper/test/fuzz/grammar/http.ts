// A grammar of what a branch may send its egress gate: an HTTP/1.x request
// head (CONNECT authority, absolute-form URL, origin form or '*'), headers
// that change how a proxy reads what follows (Content-Length, chunked,
// Connection, Upgrade, Expect), a body, and sometimes a second request in the
// same write. Hosts are names, the names the fuzz gate resolves without DNS,
// or address literals in every form (addresses.ts).
import fc from 'fast-check';
import { addressLiteral } from './addresses.js';

/** Names the fuzz gate resolves without DNS, to an address it must refuse (targets/gate-http.ts). */
export const REFUSED_NAMES: ReadonlyMap<string, string> = new Map([
  ['loopback.fuzz', '127.0.0.1'],
  ['mapped.fuzz', '::ffff:7f00:1'],
  ['metadata.fuzz', '169.254.169.254'],
  ['branch.fuzz', '10.215.0.6'],
]);

const name = fc.oneof(
  fc.constantFrom('example.test', 'outside.test', 'grove-gate', 'localhost', 'EXAMPLE.test.', ...REFUSED_NAMES.keys()),
  fc.stringMatching(/^[a-z0-9-]{1,12}(\.[a-z0-9-]{1,12}){0,3}$/),
  fc.constantFrom(
    'a'.repeat(64),
    `${'a'.repeat(63)}.`.repeat(5),
    'xn--bcher-kva.example',
    'bücher.example',
    'a..b',
    '*.example.test',
    '%31%32%37.0.0.1',
    '１２７.0.0.1',
  ),
);
const host = fc.oneof({ arbitrary: name, weight: 2 }, { arbitrary: addressLiteral, weight: 3 });
/** A host as it stands before ':port': an IPv6 literal needs brackets there (one without is a fuzz case too). */
const hostBeforePort = host.map((h) => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h));
const port = fc.oneof(fc.constantFrom('80', '443', '8080', '0', '65535', '65536', '99999', '080', '', '-1', '1e3'), fc.nat(65535).map(String));
const path = fc.oneof(
  fc.constantFrom('/', '/index.html', '/a?b=c', '/%2e%2e/%2e%2e/etc', '/a#frag', '/\\..\\x', '//double'),
  fc.stringMatching(/^\/[A-Za-z0-9._~!$&'()*+,;=:@/?%-]{0,40}$/),
);

const authority = fc.oneof(
  fc.tuple(hostBeforePort, port).map(([h, p]) => `${h}:${p}`),
  host,
  fc.constantFrom('', ':443', 'example.test:', '[::1', 'a b:80', 'user@example.test:443'),
);
const absoluteUrl = fc
  .tuple(
    fc.constantFrom('http', 'http', 'HTTP', 'https', 'ftp', 'ws'),
    fc.constantFrom('', '', 'user:pass@', 'user@', ':@'),
    hostBeforePort,
    fc.option(port),
    path,
  )
  .map(([scheme, credentials, h, p, rest]) => `${scheme}://${credentials}${h}${p === null ? '' : `:${p}`}${rest}`);

const method = fc.oneof(fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'get', 'PROPFIND'), fc.stringMatching(/^[A-Z]{1,40}$/));
const requestLine = fc.oneof(
  authority.map((a) => `CONNECT ${a}`),
  fc.tuple(method, absoluteUrl).map(([m, u]) => `${m} ${u}`),
  fc.tuple(method, path).map(([m, p]) => `${m} ${p}`),
  fc.constant('OPTIONS *'),
);
const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'http/1.1', '');

const header = fc.oneof(
  host.map((h) => `Host: ${h}`),
  fc.constantFrom('0', '5', '-1', '99999999999999999999', '1, 2').map((n) => `Content-Length: ${n}`),
  fc.constantFrom(
    'Transfer-Encoding: chunked',
    'Transfer-Encoding: gzip, chunked',
    'Connection: close',
    'Connection: keep-alive, Upgrade',
    'Proxy-Connection: keep-alive',
  ),
  fc.constantFrom('Upgrade: websocket', 'Expect: 100-continue', 'Proxy-Authorization: Basic Zm9vOmJhcg==', ' folded continuation', 'NoColon', ': no name'),
  fc.integer({ min: 1, max: 20_000 }).map((n) => `X-Long: ${'a'.repeat(n)}`),
);

const request = fc
  .tuple(
    requestLine,
    version,
    fc.array(header, { maxLength: 6 }),
    fc.constantFrom('\r\n', '\r\n', '\n'),
    fc.constantFrom('', 'hello', '5\r\nhello\r\n0\r\n\r\n'),
  )
  .map(([line, v, headers, eol, body]) => `${line}${v ? ` ${v}` : ''}${eol}${headers.map((h) => `${h}${eol}`).join('')}${eol}${body}`);

/** One request, sometimes followed by a second in the same write. */
export const httpRequests: fc.Arbitrary<Uint8Array> = fc.tuple(request, fc.option(request, { freq: 4 })).map(([a, b]) => Buffer.from(a + (b ?? ''), 'latin1'));

export const httpTokens: readonly Uint8Array[] = [
  'CONNECT ',
  'GET http://',
  ' HTTP/1.1\r\n',
  '\r\n',
  '\r\n\r\n',
  'Host: ',
  'Content-Length: ',
  'Transfer-Encoding: chunked\r\n',
  '[::ffff:7f00:1]',
  '0x7f.1',
  ':443',
  '@',
  '%',
  '#',
  '?',
  '\\',
].map((t) => Buffer.from(t, 'latin1'));
