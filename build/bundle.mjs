// The esbuild run of build/compile.sh, which says what it makes and when:
// Grove's programs from their TypeScript into dist/, each bundled with the
// packages it uses, what they share in dist/chunks/.
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import * as esbuild from 'esbuild';

const repo = path.resolve(import.meta.dirname, '..');
const dist = path.join(repo, 'dist');
const chunks = path.join(dist, 'chunks');

/**
 * zod's error messages come in some forty languages, and its namespace keeps
 * them all in a bundle. Grove uses zod's default, English, alone; every call
 * of the CLI would parse the others.
 */
const zodInEnglishOnly = {
  name: 'zod-in-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: path.dirname(args.path),
    }));
  },
};

const built = await esbuild
  .build({
    absWorkingDir: repo,
    entryPoints: ['main/src/cli/grove.ts', 'privileged-helper/src/daemon.ts', 'privileged-helper/bench/main.ts'],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: dist,
    outbase: '.',
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: true,
    sourcesContent: false,
    metafile: true,
    // The native addons are built for the node that loads them; ws's optional
    // native speed-ups are not installed.
    external: ['better-sqlite3', 'node-pty', 'bufferutil', 'utf-8-validate'],
    // The bundled CommonJS packages call require().
    banner: { js: "import { createRequire as __groveRequire } from 'node:module'; const require = __groveRequire(import.meta.url);" },
    plugins: [zodInEnglishOnly],
    logLevel: 'warning',
  })
  .catch(() => null); // esbuild has said why
if (!built) process.exit(1);

// Chunks are named after their content: those of earlier compiles that this
// one did not write are left over.
const written = new Set(Object.keys(built.metafile.outputs).map((file) => path.resolve(repo, file)));
for (const name of await readdir(chunks)) {
  if (!written.has(path.join(chunks, name))) await rm(path.join(chunks, name));
}
