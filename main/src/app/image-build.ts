// An image build asked for in the app. The helper builds only from files on
// the host, which it reads as the caller (this app's user): a Containerfile
// typed in the app is written here first, into a fresh folder only this user
// can read, and that folder goes when the build ends, however it ends.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { HelperClient } from '../helper-client/client.js';
import type { Image, RequestParams } from '../api/contract.js';

export async function buildImage(client: HelperClient, params: RequestParams<'image.build'>): Promise<Image> {
  const { containerfileText, ...rest } = params;
  if (containerfileText === undefined) return client.request('image.build', rest);
  // mkdtemp makes the folder 0700: nobody else on the host reads the recipe or swaps it for another.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'grove-typed-in-app-'));
  try {
    const containerfile = path.join(dir, 'Containerfile');
    await writeFile(containerfile, containerfileText, { mode: 0o600, flag: 'wx' });
    return await client.request('image.build', { ...rest, containerfile, context: rest.context ?? dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
