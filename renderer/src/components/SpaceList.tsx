// What each branch and version holds in the pool, by what deleting it would
// free (btrfs's exclusive bytes), most first: in the low-pool banner and the
// Performance tab.
import type { SpaceReport } from '../../../main/src/api/contract.js';

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
