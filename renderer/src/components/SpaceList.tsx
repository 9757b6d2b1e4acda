// What each branch and version holds in the pool, by what deleting it would
// free (btrfs's exclusive bytes), most first: in the low-pool banner and the
// Performance tab, and the hook that measures it on request.
import { useState } from 'react';
import type { SpaceReport } from '../../../main/src/api/contract.js';
import { useApp } from './context.js';

export const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

export function SpaceList({ report, limit }: { report: SpaceReport; limit?: number }) {
  const rows = [
    ...report.branches.map((b) => ({ key: b.workspace, what: `branch ${b.name} (${b.state})`, freed: b.exclusiveBytes, total: b.totalBytes })),
    ...report.versions.map((v) => ({
      key: v.version,
      what: `version ${v.label ?? v.version}${v.orphanOf ? ` of deleted ${v.orphanOf}` : ''}`,
      freed: v.exclusiveBytes,
      total: v.totalBytes,
    })),
  ]
    .sort((a, b) => b.freed - a.freed)
    .slice(0, limit);
  return (
    <ol className="pool-biggest" aria-label="what deleting would free">
      {rows.map((r) => (
        <li key={r.key} title={`refers to ${mib(r.total)}, shared blocks included`}>
          {r.what}: frees {mib(r.freed)}
        </li>
      ))}
    </ol>
  );
}

/** space.get on request: it walks every branch and version, so it is never polled. */
export function useSpaceReport(): { report: SpaceReport | null; measuring: boolean; measure: () => Promise<void> } {
  const act = useApp((s) => s.act);
  const [report, setReport] = useState<SpaceReport | null>(null);
  const [measuring, setMeasuring] = useState(false);
  const measure = async () => {
    setMeasuring(true);
    setReport((await act('space.get', {})) ?? null);
    setMeasuring(false);
  };
  return { report, measuring, measure };
}
