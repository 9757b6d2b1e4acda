// The HTTPS identity the controller serves branches' streams with
// (docs/stream.md): a local CA made once per host and a certificate it signs
// for this host's loopback names, all in the helper's state directory (root
// only). Persons get the host's certificate and key, and the CA to trust,
// through the person socket (stream.tls); agents never do.
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { run } from '../host/run.js';

export interface StreamTls {
  /** The host's certificate (PEM), signed by the CA. */
  cert: string;
  /** Its private key (PEM). */
  key: string;
  /** The CA's certificate (PEM): what a browser or Electron is told to trust. */
  ca: string;
}

const CA_DAYS = '3650';
/** Browsers refuse server certificates valid for longer than 825 days. */
const HOST_DAYS = '825';
const FILES = ['ca.pem', 'ca.key', 'host.pem', 'host.key'] as const;

/** Makes the CA and the host certificate in `dir` unless all four files are there; returns what stream.tls hands out. */
export async function ensureStreamTls(dir: string): Promise<StreamTls> {
  const present = await Promise.all(
    FILES.map((f) =>
      stat(path.join(dir, f)).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (!present.every(Boolean)) await makeStreamTls(dir);
  const [cert, key, ca] = await Promise.all(['host.pem', 'host.key', 'ca.pem'].map((f) => readFile(path.join(dir, f), 'utf8')));
  return { cert: cert!, key: key!, ca: ca! };
}

async function makeStreamTls(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const host = hostname().replace(/[^\w.-]/g, '');
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    CA_DAYS,
    '-subj',
    `/CN=Grove local CA (${host})`,
    '-addext',
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    file('host.key'),
    '-out',
    file('host.csr'),
    '-subj',
    `/CN=${host}`,
    '-addext',
    `subjectAltName=DNS:localhost,DNS:${host},IP:127.0.0.1,IP:::1`,
  ]);
  await writeFile(file('host.ext'), 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    file('host.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    HOST_DAYS,
    '-copy_extensions',
    'copyall',
    '-extfile',
    file('host.ext'),
    '-out',
    file('host.pem'),
  ]);
  await Promise.all(['host.csr', 'host.ext', 'ca.srl'].map((f) => rm(file(f), { force: true })));
}
