import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { imageRoomBytes } from '../../src/images/recipe-builder.js';
import { statfs } from 'node:fs/promises';
import { backedBy, MiB, requireSpace, spaceAt } from '../../src/host/space.js';

describe('free space before an operation', () => {
  it('lets an operation that fits through', async () => {
    await expect(requireSpace('a fork', [{ where: 'the pool', dir: tmpdir(), bytes: MiB, why: 'a test' }])).resolves.toBeUndefined();
  });

  it('refuses one that does not fit with E_NO_SPACE, the numbers and what to do', async () => {
    const { freeBytes } = await spaceAt(tmpdir());
    const need = freeBytes + 1024 * MiB;
    await expect(
      requireSpace("a checkpoint of 'alpha'", [{ where: 'the pool', dir: tmpdir(), bytes: need, why: "its processes' memory" }]),
    ).rejects.toMatchObject({
      code: 'E_NO_SPACE',
      message: expect.stringMatching(
        new RegExp(
          `^a checkpoint of 'alpha' needs about ${Math.ceil(need / MiB)} MiB in the pool \\(its processes' memory\\) and the pool has \\d+ MiB free: discard branches or delete versions`,
        ),
      ),
    });
  });

  it('plans an image build from the size of its last build, or a guess before the first', () => {
    expect(imageRoomBytes(1000 * MiB)).toBe(1512 * MiB);
    expect(imageRoomBytes(null)).toBe(2560 * MiB);
  });
});

describe('free space of a pool in a sparse file', () => {
  it('is the lesser of the pool and the disk its file is on', async () => {
    const own = await statfs('/dev/shm');
    const host = await statfs('/');
    backedBy('/dev/shm', '/');
    const seen = await spaceAt('/dev/shm');
    expect(seen.freeBytes).toBe(Math.min(own.bavail * own.bsize, host.bavail * host.bsize));
    expect(seen.totalBytes).toBe(own.blocks * own.bsize);
    // Only below the pool's root.
    expect((await spaceAt('/')).freeBytes).toBe(host.bavail * host.bsize);
  });
});
