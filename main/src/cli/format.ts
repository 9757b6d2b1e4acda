// Human-readable output of the CLI (--json prints the objects as they are).
import type { DoctorReport, Image, Workspace } from '../../../privileged-helper/src/protocol/entities.js';

export function printDoctor(report: DoctorReport): void {
  for (const c of report.checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(12)} ${c.detail}`);
  console.log(report.ok ? '\nThis host can run Grove.' : '\nSome checks failed: see above.');
}

export function printImage(img: Image): void {
  const size = img.sizeBytes === null ? '' : ` ${(img.sizeBytes / 2 ** 20).toFixed(0)} MiB`;
  console.log(`${img.name}\t${img.state}${size}${img.builtAt ? `\tbuilt ${img.builtAt}` : ''}`);
}

function ports(w: Workspace): string {
  return w.ports.map((p) => `${p.hostAddress}:${p.hostPort}->${p.containerPort}`).join(' ');
}

export function printWorkspace(w: Workspace): void {
  console.log(`id:       ${w.id}`);
  console.log(`name:     ${w.name}`);
  console.log(`state:    ${w.state}`);
  console.log(`hostname: ${w.hostname}`);
  for (const p of w.ports) console.log(`port:     ${p.hostAddress}:${p.hostPort} -> ${p.containerPort}${p.containerPort === 5900 ? ' (VNC)' : ''}`);
}

export function printWorkspaces(list: Workspace[]): void {
  if (list.length === 0) {
    console.log("No workspaces yet. Create one with: grove ws create NAME");
    return;
  }
  console.log(['ID', 'NAME', 'STATE', 'PORTS'].join('\t'));
  for (const w of list) console.log([w.id, w.name, w.state, ports(w)].join('\t'));
}
