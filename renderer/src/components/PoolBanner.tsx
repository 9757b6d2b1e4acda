// The pool running out of space: a banner as soon as the helper says so
// (pool.space), and on request what each branch and version would free if
// deleted, largest first (space.get measures every one: not polled).
import { useState } from 'react';
import type { SpaceReport } from '../../../main/src/api/contract.js';
import { useApp } from './context.js';
import { mib, SpaceList } from './SpaceList.js';

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
      {report && <SpaceList report={report} limit={BIGGEST_SHOWN} />}
    </div>
  );
}
