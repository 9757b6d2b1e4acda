// The pool running out of space: a banner as soon as the helper says so
// (pool.space), and on request what each branch and version would free if
// deleted, largest first (space.get measures every one: not polled).
import { useApp } from './context.js';
import { mib, SpaceList, useSpaceReport } from './SpaceList.js';

export const BIGGEST_SHOWN = 6;

export function PoolBanner() {
  const pool = useApp((s) => s.server?.pool);
  const { report, measuring, measure } = useSpaceReport();
  if (!pool?.low) return null;
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
