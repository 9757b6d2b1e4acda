// Building an image, from a Containerfile typed here or named by its path on
// the host, and pulling one. What would be sent is checked against the
// contract as it is typed, so a mistake is said before anything starts; what
// the helper refuses comes back as a notice in its words.
import { useState, type FormEvent } from 'react';
import type { z } from 'zod';
import { requests } from '../../../main/src/api/contract.js';
import { isLive } from '../store/app.js';
import { useApp } from './context.js';
import { FolderField } from './FolderField.js';

/** What the editor starts with: Grove's desktop, and a step to replace with one's own. */
export const CONTAINERFILE_START = 'FROM grove/desktop\nRUN …\n';

/** The first thing the contract finds wrong with what would be sent, in its words; null when nothing is. */
export function firstProblem(schema: z.ZodType, value: unknown): string | null {
  const checked = schema.safeParse(value);
  return checked.success ? null : (checked.error.issues[0]?.message ?? 'not valid');
}

/** KEY=VALUE lines (blank lines skipped) as build arguments; undefined when there are none. */
export function parseBuildArgs(text: string): { args?: Record<string, string>; error?: string } {
  const args: Record<string, string> = {};
  const lines = text.split('\n').map((l) => l.trim());
  for (const [i, line] of lines.entries()) {
    if (line === '') continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return { error: `build argument line ${i + 1} is not KEY=VALUE` };
    args[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return Object.keys(args).length > 0 ? { args } : {};
}

export function BuildForm({ onStart }: { onStart: (image: string) => void }) {
  const act = useApp((s) => s.act);
  const live = useApp(isLive);
  const [name, setName] = useState('');
  const [typed, setTyped] = useState(true);
  const [text, setText] = useState(CONTAINERFILE_START);
  const [file, setFile] = useState('');
  const [context, setContext] = useState('');
  const [argText, setArgText] = useState('');
  const [busy, setBusy] = useState(false);
  const { args, error } = parseBuildArgs(argText);
  const params = {
    name,
    ...(typed ? { containerfileText: text } : { containerfile: file }),
    ...(context ? { context } : {}),
    ...(args ? { buildArgs: args } : {}),
  };
  const problem = error ?? firstProblem(requests['image.build'].params, params);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (problem) return;
    setBusy(true);
    onStart(name);
    await act('image.build', params);
    setBusy(false);
  };
  return (
    <form className="image-form" data-testid="build-form" onSubmit={(e) => void submit(e)}>
      <input aria-label="image name" placeholder="name, e.g. my-tools" value={name} onChange={(e) => setName(e.target.value.toLowerCase())} disabled={busy} />
      <div className="image-form-choice" role="radiogroup" aria-label="where the Containerfile is">
        <label className="check">
          <input type="radio" checked={typed} onChange={() => setTyped(true)} disabled={busy} /> Type the Containerfile here
        </label>
        <label className="check">
          <input type="radio" checked={!typed} onChange={() => setTyped(false)} disabled={busy} /> Use a Containerfile on this machine
        </label>
      </div>
      {typed ? (
        <textarea
          className="containerfile"
          aria-label="Containerfile"
          rows={7}
          spellCheck={false}
          value={text}
          onChange={(e) => setText(e.target.value)}
          disabled={busy}
        />
      ) : (
        <input
          aria-label="Containerfile path"
          placeholder="/home/you/app/Containerfile"
          value={file}
          onChange={(e) => setFile(e.target.value)}
          disabled={busy}
          spellCheck={false}
        />
      )}
      <FolderField
        label="build context"
        placeholder={typed ? 'build context folder, for COPY and ADD (optional)' : "build context folder (optional; default: the Containerfile's folder)"}
        value={context}
        onChange={setContext}
        disabled={busy}
      />
      <textarea
        aria-label="build arguments"
        placeholder="build arguments, one KEY=VALUE a line (optional)"
        rows={2}
        spellCheck={false}
        value={argText}
        onChange={(e) => setArgText(e.target.value)}
        disabled={busy}
      />
      {name && problem && <div className="hint">{problem}</div>}
      <button className="primary" type="submit" disabled={!live || busy || problem !== null}>
        {busy ? 'Building…' : 'Build'}
      </button>
    </form>
  );
}

export function PullForm({ onStart }: { onStart: (image: string) => void }) {
  const act = useApp((s) => s.act);
  const live = useApp(isLive);
  const [name, setName] = useState('');
  const [ref, setRef] = useState('');
  const [busy, setBusy] = useState(false);
  const problem = firstProblem(requests['image.pull'].params, { name, ref });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (problem) return;
    setBusy(true);
    onStart(name);
    await act('image.pull', { name, ref });
    setBusy(false);
  };
  return (
    <form className="image-form" data-testid="pull-form" onSubmit={(e) => void submit(e)}>
      <input aria-label="pulled image name" placeholder="name in Grove" value={name} onChange={(e) => setName(e.target.value.toLowerCase())} disabled={busy} />
      <input
        aria-label="image reference"
        placeholder="docker://registry.example/team/tools:1.0, or oci-archive:/path/image.tar"
        value={ref}
        onChange={(e) => setRef(e.target.value.trim())}
        disabled={busy}
        spellCheck={false}
      />
      {name && ref && problem && <div className="hint">{problem}</div>}
      <p className="muted small">
        A registry that asks for credentials: pull with <span className="mono">grove image pull</span>, which reads yours from auth.json.
      </p>
      <button type="submit" disabled={!live || busy || problem !== null}>
        {busy ? 'Pulling…' : 'Pull'}
      </button>
    </form>
  );
}
