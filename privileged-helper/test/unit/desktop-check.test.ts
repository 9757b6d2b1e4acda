// What an image lacks to be a desktop, looked at from the host with every
// path resolved inside the image's root: a link in the image never leads to
// the host's files.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kindInside, missingForDesktop } from '../../src/images/desktop-check.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'grove-image-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function file(p: string): void {
  mkdirSync(path.dirname(path.join(root, p)), { recursive: true });
  writeFileSync(path.join(root, p), '#!/bin/sh\n');
}

function desktop(): void {
  for (const p of ['/usr/local/lib/grove/session.sh', '/usr/bin/tini', '/bin/bash', '/usr/bin/Xvnc', '/usr/bin/openbox']) file(p);
  mkdirSync(path.join(root, 'root'));
}

describe('missingForDesktop', () => {
  it('finds nothing missing in an image with the session and its programs', async () => {
    desktop();
    expect(await missingForDesktop(root)).toEqual([]);
  });

  it('names each missing part and the package that provides it', async () => {
    file('/bin/bash');
    expect(await missingForDesktop(root)).toEqual([
      "Grove's desktop session (/usr/local/lib/grove/session.sh)",
      'tini (package tini)',
      'Xvnc (package tigervnc-standalone-server)',
      'openbox (package openbox)',
      'a /root folder (the home every branch gets a copy of)',
    ]);
  });

  it('follows links inside the image (usr-merged /bin), never to the host', async () => {
    desktop();
    rmSync(path.join(root, 'bin'), { recursive: true });
    symlinkSync('usr/bin', path.join(root, 'bin'));
    file('/usr/bin/bash');
    expect(await missingForDesktop(root)).toEqual([]);
    // An absolute link to the host's /usr/bin resolves inside the image: the image has no /usr/sbin/tini.
    rmSync(path.join(root, 'usr/bin/tini'));
    symlinkSync('/usr/sbin/tini', path.join(root, 'usr/bin/tini'));
    expect(await missingForDesktop(root)).toEqual(['tini (package tini)']);
  });

  it('refuses a /root that is a link (it would be bound from the host)', async () => {
    desktop();
    rmSync(path.join(root, 'root'), { recursive: true });
    symlinkSync('/etc', path.join(root, 'root'));
    expect(await missingForDesktop(root)).toEqual(['a /root folder (the home every branch gets a copy of)']);
  });
});

describe('kindInside', () => {
  it('keeps .. and absolute links inside the root, and gives up on a loop', async () => {
    file('/etc/passwd');
    symlinkSync('../../../../etc/passwd', path.join(root, 'up'));
    symlinkSync('/etc', path.join(root, 'abs'));
    symlinkSync('loop2', path.join(root, 'loop1'));
    symlinkSync('loop1', path.join(root, 'loop2'));
    expect(await kindInside(root, '/up')).toBe('file');
    expect(await kindInside(root, '/abs/passwd')).toBe('file');
    expect(await kindInside(root, '/abs/shadow')).toBeNull(); // the host has one; the image does not
    expect(await kindInside(root, '/loop1')).toBeNull();
    expect(await kindInside(root, '/abs', { followLast: false })).toBe('other');
  });
});
