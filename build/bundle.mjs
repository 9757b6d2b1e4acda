// The esbuild runs of Grove's programs, with one set of options:
//   node build/bundle.mjs              build/compile.sh's run, which says what
//     it makes and when: the programs from their TypeScript into dist/, each
//     bundled with the packages it uses, what they share in dist/chunks/;
//   node build/bundle.mjs --electron   build/build-electron.sh's run: the
//     controller and the helper as one file each, as the package carries them.
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

/** Options every bundle of a Grove program shares. */
const common = {
  absWorkingDir: repo,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // The native addons are built for the node that loads them; ws's optional
  // native speed-ups are not installed.
  external: ['better-sqlite3', 'node-pty', 'bufferutil', 'utf-8-validate'],
  // The bundled CommonJS packages call require().
  banner: { js: "import { createRequire as __groveRequire } from 'node:module'; const require = __groveRequire(import.meta.url);" },
  plugins: [zodInEnglishOnly],
  logLevel: 'warning',
};

if (process.argv[2] === '--electron') {
  const single = (entry, outfile) => esbuild.build({ ...common, entryPoints: [entry], outfile: path.join(repo, outfile) });
  const ok = await Promise.all([
    single('main/src/app/start.ts', 'electron/dist/controller.mjs'),
    single('privileged-helper/src/daemon.ts', 'dist/helper/daemon.mjs'),
  ]).catch(() => null); // esbuild has said why
  process.exit(ok ? 0 : 1);
}

const built = await esbuild
  .build({
    ...common,
    entryPoints: ['main/src/cli/grove.ts', 'privileged-helper/src/daemon.ts', 'privileged-helper/bench/main.ts'],
    splitting: true,
    outdir: dist,
    outbase: '.',
    chunkNames: 'chunks/[name]-[hash]',
    // Every call of the CLI has V8 parse the bundle before it runs: without
    // the whitespace and with shorter syntax there is a third less of it.
    // Names stay, so that a stack trace reads without the source maps.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: true,
    sourcesContent: false,
    metafile: true,
  })
  .catch(() => null); // esbuild has said why
if (!built) process.exit(1);

// Chunks are named after their content: those of earlier compiles that this
// one did not write are left over.
const written = new Set(Object.keys(built.metafile.outputs).map((file) => path.resolve(repo, file)));
for (const name of await readdir(chunks)) {
  if (!written.has(path.join(chunks, name))) await rm(path.join(chunks, name));
}
