// Noise: what a branch changed that is not its work. Grove's own per-branch
// files (workspace-service.ts writeIdentity), a repository's own `.git`
// folder, and under the project's path whatever its `.gitignore` files match
// (build outputs, installed packages, caches) are left out of a diff, a merge
// and an approval's preview; `--all` shows them.
//
// The `.gitignore` files are the branch's: hostile input. They are read as
// files inside its tree (host/in-root.ts), never by git (a branch's
// .git/config can run commands), and matched by the `ignore` package, as git
// would (nested ones, `!` re-inclusion, a folder's contents never re-included
// once the folder is ignored). Bounded: a file over MAX_GITIGNORE_BYTES, past
// MAX_GITIGNORE_FILES, or a rule with more runs of `*` than the package
// matches without its regular expressions backtracking without end, is not
// consulted; past MATCH_BUDGET_MS of matching in one diff, no more rules are:
// what is not consulted is shown, never hidden. A `.gitignore` itself is
// always shown, so a change of the rules is seen where its effect is not.
import path from 'node:path';
import ignorePackage, { type Ignore } from 'ignore';
import { openFileInRoot } from '../host/in-root.js';
import { GENERATION_FILE } from '../workspaces/generation.js';

/** Grove's own per-branch files (workspace-service.ts writeIdentity, the fork generation): never compared, merged or exported. */
export const GROVE_OWN_FILES: ReadonlySet<string> = new Set(['/etc/hostname', '/etc/hosts', '/etc/machine-id', GENERATION_FILE]);

export const MAX_GITIGNORE_BYTES = 64 * 1024;
export const MAX_GITIGNORE_FILES = 1000;
const MAX_RULE_CHARS = 1024;
/** Runs of `*` in one rule: with more, a long name makes the package's regular expression backtrack for seconds. */
const MAX_STAR_RUNS = 2;
const MATCH_BUDGET_MS = 2000;
/** The package's CommonJS export is its function, which is its own `default` too: the name its typings give it. */
const ignore = ignorePackage.default;

/** Which changed paths of one tree are noise; a path is from the tree's root, a folder's with a trailing '/'. */
export class Noise {
  /** Folder → its .gitignore's rules (null: it has none, or one not consulted). */
  private readonly rules = new Map<string, Ignore | null>();
  /** Path (a folder's with '/') → whether it is ignored. */
  private readonly verdicts = new Map<string, boolean>();
  private filesRead = 0;
  private matchingMs = 0;

  /** `root`: the tree whose .gitignore files count; `project`: its project's folder, null when the workspace has none. */
  constructor(
    private readonly root: string,
    private readonly project: string | null,
  ) {}

  /** The paths that are not noise, in their order. */
  async keep(paths: readonly string[]): Promise<string[]> {
    const kept: string[] = [];
    for (const p of paths) if (!(await this.isNoise(p))) kept.push(p);
    return kept;
  }

  async isNoise(rel: string): Promise<boolean> {
    if (GROVE_OWN_FILES.has(rel)) return true;
    const project = this.project === null ? null : path.posix.normalize(this.project).replace(/\/+$/, '');
    if (project === null || !rel.startsWith(`${project}/`)) return false;
    const isFolder = rel.endsWith('/');
    const parts = rel
      .slice(project.length + 1)
      .replace(/\/+$/, '')
      .split('/');
    for (const [i, name] of parts.entries()) {
      const last = i === parts.length - 1;
      if (name === '.git') return true;
      if (last && !isFolder && name === '.gitignore') return false;
      if (await this.ignored(project, parts.slice(0, i + 1), !last || isFolder)) return true;
    }
    return false;
  }

  /** Whether the path `parts` below the project is ignored by the rules of the folders above it (the deepest that says so decides). */
  private async ignored(project: string, parts: string[], isFolder: boolean): Promise<boolean> {
    const key = `${parts.join('/')}${isFolder ? '/' : ''}`;
    const known = this.verdicts.get(key);
    if (known !== undefined) return known;
    let verdict = false;
    for (let depth = 0; depth < parts.length; depth++) {
      const rules = await this.rulesOf(path.posix.join(project, ...parts.slice(0, depth)));
      if (!rules || this.matchingMs > MATCH_BUDGET_MS) continue;
      const started = performance.now();
      const below = `${parts.slice(depth).join('/')}${isFolder ? '/' : ''}`;
      const result = testOrNothing(rules, below);
      this.matchingMs += performance.now() - started;
      if (result.ignored) verdict = true;
      else if (result.unignored) verdict = false;
    }
    this.verdicts.set(key, verdict);
    return verdict;
  }

  private async rulesOf(folder: string): Promise<Ignore | null> {
    if (this.rules.has(folder)) return this.rules.get(folder)!;
    const text = this.filesRead < MAX_GITIGNORE_FILES ? await readBounded(this.root, `${folder}/.gitignore`) : null;
    if (text !== null) this.filesRead++;
    const rules = text === null ? null : parseRules(text);
    this.rules.set(folder, rules);
    return rules;
  }
}

/** The rules of a .gitignore's text, those the bounds allow; null when none. */
export function parseRules(text: string): Ignore | null {
  const lines = text.split(/\r?\n/).filter((line) => line.length <= MAX_RULE_CHARS && (line.match(/\*+/g)?.length ?? 0) <= MAX_STAR_RUNS && line.trim() !== '');
  if (lines.length === 0) return null;
  try {
    return ignore({ ignorecase: false }).add(lines);
  } catch {
    return null; // a rule the package cannot parse: the file is not consulted
  }
}

/** The package refuses names it takes for something other than a relative path ('...'): those no rule matches. */
function testOrNothing(rules: Ignore, rel: string): { ignored: boolean; unignored: boolean } {
  try {
    return rules.test(rel);
  } catch {
    return { ignored: false, unignored: false };
  }
}

/** The text of a regular file of at most MAX_GITIGNORE_BYTES in the tree; null when there is none, or it is bigger. */
async function readBounded(root: string, rel: string): Promise<string | null> {
  const fh = await openFileInRoot(root, rel);
  if (!fh) return null;
  try {
    const buf = Buffer.alloc(MAX_GITIGNORE_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, length, buf.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_GITIGNORE_BYTES) return null;
    }
    return buf.subarray(0, length).toString('utf8');
  } finally {
    await fh.close();
  }
}
