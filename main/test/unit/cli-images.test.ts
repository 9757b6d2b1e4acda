// The CLI's side of images and copies: a registry's credentials from the
// caller's auth.json, and which side of `grove cp` is a branch.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { credentialsFor } from '../../src/cli/credentials.js';
import { branchSide } from '../../src/cli/image-commands.js';
import { archivePathOf, registryOf } from '../../../privileged-helper/src/protocol/image-refs.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-auth-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('credentialsFor', () => {
  it("takes the entry for the reference's registry only", () => {
    const file = path.join(dir, 'auth.json');
    const auth = (u: string, p: string) => ({ auth: Buffer.from(`${u}:${p}`).toString('base64') });
    writeFileSync(file, JSON.stringify({ auths: { '127.0.0.1:5443': auth('grove', 'pa:ss'), 'other.example': auth('x', 'y') } }));
    expect(credentialsFor('docker://127.0.0.1:5443/grove/tools:1', file)).toEqual({ username: 'grove', password: 'pa:ss' });
    expect(credentialsFor('docker://nowhere.example/a:1', file)).toBeUndefined();
    expect(credentialsFor('oci-archive:/tmp/a.tar', file)).toBeUndefined();
  });

  it('says so when the auth file named cannot be read', () => {
    expect(() => credentialsFor('docker://r.example/a', path.join(dir, 'missing.json'))).toThrow(/cannot read the auth file/);
  });
});

describe('image references', () => {
  it('finds the registry of a reference', () => {
    expect(registryOf('docker://127.0.0.1:5443/grove/tools@sha256:' + 'a'.repeat(64))).toBe('127.0.0.1:5443');
    expect(registryOf('docker://localhost/app')).toBe('localhost');
    expect(registryOf('docker://debian:bookworm')).toBe('docker.io');
    expect(registryOf('docker://library/debian')).toBe('docker.io');
    expect(registryOf('oci-archive:/tmp/x.tar')).toBeNull();
    expect(archivePathOf('oci-archive:/tmp/x.tar')).toEqual({ transport: 'oci-archive', path: '/tmp/x.tar' });
    expect(archivePathOf('docker://r/x')).toBeNull();
  });
});

describe('grove cp sides', () => {
  it('takes BRANCH:PATH as a branch, with a relative path under /root, and anything else as the host', () => {
    expect(branchSide('feature-1:/srv/app')).toEqual({ workspace: 'feature-1', path: '/srv/app' });
    expect(branchSide('feature-1:notes.txt')).toEqual({ workspace: 'feature-1', path: '/root/notes.txt' });
    expect(branchSide('feature-1:')).toEqual({ workspace: 'feature-1', path: '/root' });
    expect(branchSide('./a:b')).toBeNull();
    expect(branchSide('/tmp/x')).toBeNull();
  });
});
