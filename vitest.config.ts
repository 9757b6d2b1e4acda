import { defineConfig } from 'vitest/config';

// unit: pure logic, fast, no privileges: it passes as an unprivileged user.
// privileged: single programs as root, no helper: the native programs that
//   join cgroups, drop capabilities or snapshot btrfs, and peer credentials.
// renderer: the renderer's stores, tree layout and components, under happy-dom.
// system: the real helper as root against real btrfs, crun, netns and CRIU;
//   one helper instance for the whole run (privileged-helper/test/system/global-setup.ts),
//   files in sequence because workspaces compete for 2 cores.
// unit, privileged and system compile Grove's programs first when a source changed
// (privileged-helper/test/compile-first.ts): some of their tests run them.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{privileged-helper,main}/test/unit/**/*.test.ts'],
          globalSetup: ['privileged-helper/test/compile-first.ts'],
        },
      },
      {
        test: {
          name: 'privileged',
          include: ['privileged-helper/test/privileged/**/*.test.ts'],
          globalSetup: ['privileged-helper/test/compile-first.ts'],
        },
      },
      {
        test: {
          name: 'renderer',
          include: ['renderer/test/**/*.test.{ts,tsx}'],
          environment: 'happy-dom',
        },
      },
      {
        test: {
          name: 'system',
          include: ['{privileged-helper,main}/test/system/**/*.test.ts'],
          globalSetup: ['privileged-helper/test/compile-first.ts', 'privileged-helper/test/system/global-setup.ts'],
          setupFiles: ['privileged-helper/test/system/log-on-failure.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 1_800_000,
        },
      },
    ],
  },
});
