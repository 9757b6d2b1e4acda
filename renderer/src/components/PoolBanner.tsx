// The pool running out of space: a banner as soon as the helper says so
// (pool.space), and on request what each branch and version would free if
// deleted, largest first (space.get measures every one: not polled).
import { useState } from 'react';
import type { SpaceReport } from '../../../main/src/api/contract.js';
import { useApp } from './context.js';

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
export const BIGGEST_SHOWN = 6;

export function PoolBanner() {
  const pool = useApp((s) => s.server?.pool);
  const act = useApp((s) => s.act);
  const [report, setReport] = useState<SpaceReport | null>(null);
  const [measuring, setMeasuring] = useState(false);
  if (!pool?.low) return null;
  const measure = async () => {
    setMeasuring(true);
    setReport((await act('space.get', {})) ?? null);
    setMeasuring(false);
  };
  return (
    <div className="banner warn pool-banner" role="alert" data-testid="pool-banner">
      The pool is nearly full: {mib(pool.freeBytes)} of {mib(pool.totalBytes)} free. Forks, checkpoints and new workspaces will be refused until you delete
      branches or versions.{' '}
      <button onClick={() => void measure()} disabled={measuring}>
        {measuring ? 'Measuring…' : 'What to delete'}
      </button>
      {report && <Biggest report={report} />}
    </div>
  );
}

/** Branches and versions by what deleting each frees, most first. */
function Biggest({ report }: { report: SpaceReport }) {
  const rows = [
    ...report.branches.map((b) => ({ key: b.workspace, what: `branch ${b.name} (${b.state})`, bytes: b.exclusiveBytes })),
    ...report.versions.map((v) => ({ key: v.version, what: `version ${v.label ?? v.version}${v.orphanOf ? ` of deleted ${v.orphanOf}` : ''}`, bytes: v.exclusiveBytes })),
  ]
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, BIGGEST_SHOWN);
  return (
    <ol className="pool-biggest" aria-label="what deleting would free">
      {rows.map((r) => (
        <li key={r.key}>
          {r.what}: frees {mib(r.bytes)}
        </li>
      ))}
    </ol>
  );
}
