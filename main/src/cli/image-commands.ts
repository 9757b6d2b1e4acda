// `grove image …` and `grove cp`: images of one's own (built from a
// Containerfile, pulled, pushed, removed) and files into and out of a branch.
// Paths on the host are made absolute here, against the caller's working
// folder; the helper reads and writes them as the caller.
import path from 'node:path';
import { GroveError } from '../helper-client/client.js';
import type { Command } from 'commander';
import type { HelperClient } from '../helper-client/client.js';
import { output, program, withClient } from './context.js';
import { credentialsFor } from './credentials.js';
import { printImage } from './format.js';
import { askPerson, isAgent, printAsked, type AskOptions } from './approval-commands.js';

/** Prints the progress lines of the image operation on `name` as they come. */
async function followImage(c: HelperClient, name: string): Promise<void> {
  await c.subscribe(['progress']);
  c.on('progress', (p) => {
    if (p.image === name) process.stderr.write(`[${p.stage}] ${p.message}\n`);
  });
}

/** Prints the progress of copies into or out of `workspace` as they come. */
export async function followCopies(c: HelperClient, workspace: string): Promise<void> {
  await c.subscribe(['progress']);
  c.on('progress', (p) => {
    if (p.workspace === workspace) process.stderr.write(`[${p.stage}] ${p.message}\n`);
  });
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function buildArgs(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs) return undefined;
  const args: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new GroveError('E_INVALID_PARAMS', `--build-arg takes KEY=VALUE, not '${pair}'`);
    args[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return args;
}

/** A host path as the helper takes it: absolute, against this process's working folder. */
export function absolute(p: string): string {
  return path.resolve(process.cwd(), p);
}

export function registerImageCommands(): void {
  const image = program.command('image').description('workspace images');
  image
    .command('build')
    .argument('[name]', 'image to build', 'desktop')
    .option('-f, --file <Containerfile>', "build from a Containerfile (FROM grove/desktop starts from Grove's desktop)")
    .option('--context <dir>', "the build context (default: the Containerfile's folder)")
    .option('--build-arg <KEY=VALUE>', 'a build argument (repeat for more)', collect)
    .option('--rebuild', 'build the desktop again even if an up-to-date one exists')
    .description("build an image: Grove's desktop from its recipe, or yours from a Containerfile (each step's output is shown as it goes)")
    .action((name: string, opts: { file?: string; context?: string; buildArg?: string[]; rebuild?: boolean }) =>
      withClient(async (c) => {
        await followImage(c, name);
        const img = await c.request('image.build', {
          name,
          rebuild: opts.rebuild,
          containerfile: opts.file === undefined ? undefined : absolute(opts.file),
          context: opts.context === undefined ? undefined : absolute(opts.context),
          buildArgs: buildArgs(opts.buildArg),
        });
        output(img, () => printImage(img));
      }),
    );
  image
    .command('pull')
    .argument('<name>', 'what to call it in Grove')
    .argument('<ref>', 'docker://HOST/REPO:TAG, docker://HOST/REPO@sha256:…, oci-archive:PATH, docker-archive:PATH or oci:DIR')
    .option('--authfile <file>', "the registry's credentials (default: your auth.json, as skopeo login writes it)")
    .description('pull an image from a registry or an archive')
    .action((name: string, ref: string, opts: { authfile?: string }) =>
      withClient(async (c) => {
        await followImage(c, name);
        const img = await c.request('image.pull', { name, ref: hostRef(ref), credentials: credentialsFor(ref, opts.authfile) });
        output(img, () => printImage(img));
      }),
    );
  image
    .command('push')
    .argument('<name>', 'the image')
    .argument('<ref>', 'docker://HOST/REPO:TAG')
    .option('--authfile <file>', "the registry's credentials (default: your auth.json)")
    .description('push an image to a registry')
    .action((name: string, ref: string, opts: { authfile?: string }) =>
      withClient(async (c) => {
        await followImage(c, name);
        const pushed = await c.request('image.push', { name, ref, credentials: credentialsFor(ref, opts.authfile) });
        output(pushed, () => console.log(`${pushed.ref}\t${pushed.digest}`));
      }),
    );
  image
    .command('ls')
    .description('list images: size, layers, bytes shared with other images, digest')
    .action(() =>
      withClient(async (c) => {
        const imgs = await c.request('image.list', {});
        output(imgs, () => imgs.forEach(printImage));
      }),
    );
  image
    .command('rm')
    .argument('<name>', 'the image')
    .description('remove an image (refused while a branch or a version uses it)')
    .action((name: string) =>
      withClient(async (c) => {
        const removed = await c.request('image.remove', { name });
        output(removed, () => console.log(`removed ${removed.removed}`));
      }),
    );
}

/** An archive reference with a relative path made absolute (oci-archive:img.tar → oci-archive:/cwd/img.tar). */
function hostRef(ref: string): string {
  const m = /^(oci-archive|docker-archive|oci):(.+)$/.exec(ref);
  return m ? `${m[1]}:${absolute(m[2]!)}` : ref;
}

/** `BRANCH:PATH`, or null for a host path. A host path with a colon is written ./a:b. */
export function branchSide(arg: string): { workspace: string; path: string } | null {
  const m = /^([a-z0-9][a-z0-9-]*):(.*)$/.exec(arg);
  if (!m) return null;
  const inBranch = m[2]! === '' ? '/root' : m[2]!;
  return { workspace: m[1]!, path: inBranch.startsWith('/') ? inBranch : `/root/${inBranch}` };
}

export function registerCopyCommand(): Command {
  return program
    .command('cp')
    .argument('<src>', 'a host path, or BRANCH:PATH')
    .argument('<dst>', 'a host path, or BRANCH:PATH (exactly one side is a branch)')
    .description(
      'copy a file or folder into or out of a running branch, as docker cp does: into an existing folder under its own name, else as the path given; ' +
        'a relative path in a branch is under /root. Copying out onto the host is for persons only',
    )
    .action((src: string, dst: string) =>
      withClient(async (c) => {
        const from = branchSide(src);
        const to = branchSide(dst);
        if ((from === null) === (to === null)) throw new GroveError('E_INVALID_PARAMS', 'one side of grove cp is BRANCH:PATH and the other a host path');
        const workspace = (from ?? to)!.workspace;
        await followCopies(c, workspace);
        const result = to
          ? await c.request('file.copyIn', { workspace, from: absolute(src), to: to.path })
          : await c.request('file.copyOut', { workspace, from: from!.path, to: absolute(dst) });
        output(result, () => console.error(`copied ${(result.bytes / 2 ** 20).toFixed(1)} MiB in ${(result.ms / 1000).toFixed(1)} s`));
      }),
    );
}

export function registerExportCommand(): Command {
  return program
    .command('export')
    .argument('<branch>', 'id or name')
    .option('--git <repo>', 'a git repository on this machine that has the commit the project was copied at')
    .option('--branch <name>', 'the new branch to make there (with --git)')
    .option('--patch <file>', 'write a patch git am takes, instead of a commit')
    .option('-m, --message <text>', 'the commit message')
    .option('--force', 'replace an existing branch of that name (never the one checked out)')
    .option(
      '--since <version>',
      'only the files the branch changed since this version of its workspace, each as the branch has it now (or its deletion), ' +
        "on the origin commit's tree: the commit's parent is still the commit the project was copied at",
    )
    .description(
      "a branch's changes to its project since the workspace was made, as one commit on the commit it was copied at: " +
        'a new branch of your repository (its checkout, index and current branch are never touched), or a patch. ' +
        'An agent asks a person, who approves it into a repository of their own',
    )
    .option('--reason <text>', 'an agent: why (the person deciding reads it)')
    .option('--no-wait', 'an agent: ask, print the request id and return')
    .action((ref: string, opts: AskOptions & { git?: string; branch?: string; patch?: string; message?: string; force?: boolean; since?: string }) =>
      withClient(async (c) => {
        if ((opts.git === undefined) === (opts.patch === undefined)) throw new GroveError('E_INVALID_PARAMS', 'give --git REPO --branch NAME, or --patch FILE');
        if (opts.git !== undefined && opts.branch === undefined) throw new GroveError('E_INVALID_PARAMS', '--git needs --branch NAME');
        const to =
          opts.git !== undefined
            ? { kind: 'git' as const, repo: absolute(opts.git), branch: opts.branch!, force: opts.force }
            : { kind: 'patch' as const, file: absolute(opts.patch!) };
        if (isAgent(c)) {
          if (to.kind !== 'git' || opts.force)
            throw new GroveError('E_INVALID_PARAMS', 'an agent asks for an export with --git REPO --branch NAME (never a patch, never --force)');
          return printAsked(
            await askPerson(c, ref, { kind: 'branch.export', repo: to.repo, branch: to.branch, message: opts.message, since: opts.since }, opts),
          );
        }
        const done = await c.request('branch.export', { workspace: ref, to, message: opts.message, since: opts.since });
        output(done, () =>
          console.log(
            done.branch
              ? `${done.commit}\ton ${done.parent.slice(0, 12)} as branch ${done.branch}, ${done.files} file${done.files === 1 ? '' : 's'}`
              : `${done.commit}\ton ${done.parent.slice(0, 12)}, ${done.files} file${done.files === 1 ? '' : 's'}, patch in ${done.patch}`,
          ),
        );
      }),
    );
}
