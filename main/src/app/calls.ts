// How the app names what clients do through the helper: a call as done (the
// activity log: "agent alice · run a command") and as being done (the tree's
// mark on a branch: "alice · running a command").
import type { DesktopActionKind } from '../../../privileged-helper/src/protocol/desktop.js';
import type { MethodName } from '../../../privileged-helper/src/protocol/methods.js';

/** Audited calls whose successes their own events already tell (approval.*, grant.changed, desktop.action). */
export function toldByItsEvents(method: string): boolean {
  return method.startsWith('approval.') || method.startsWith('grant.') || method.startsWith('desktop.');
}

const CALLS: Partial<Record<MethodName, { done: string; doing: string }>> = {
  'image.build': { done: 'build image', doing: 'building an image' },
  'image.pull': { done: 'pull image', doing: 'pulling an image' },
  'image.push': { done: 'push image', doing: 'pushing an image' },
  'image.remove': { done: 'remove image', doing: 'removing an image' },
  'workspace.create': { done: 'create workspace', doing: 'creating a workspace' },
  'workspace.start': { done: 'start', doing: 'starting it' },
  'workspace.stop': { done: 'stop', doing: 'stopping it' },
  'workspace.delete': { done: 'discard', doing: 'discarding it' },
  'branch.fork': { done: 'fork', doing: 'forking it' },
  'branch.checkpoint': { done: 'checkpoint', doing: 'checkpointing' },
  'branch.rollback': { done: 'roll back', doing: 'rolling back' },
  'branch.promote': { done: 'promote to main line', doing: 'promoting it' },
  'branch.pick': { done: 'pick the winner', doing: 'picking a winner' },
  'branch.merge': { done: 'merge', doing: 'merging' },
  'branch.diff': { done: 'compare files', doing: 'comparing files' },
  'file.copyIn': { done: 'copy files in', doing: 'copying files in' },
  'workspace.limits': { done: 'change limits', doing: 'changing its limits' },
  'version.delete': { done: 'delete a version', doing: 'deleting a version' },
  'version.label': { done: 'name a version', doing: 'naming a version' },
  'exec.run': { done: 'run a command', doing: 'running a command' },
  'exec.open': { done: 'open a terminal', doing: 'in a terminal' },
  'file.upload': { done: 'upload a file', doing: 'uploading a file' },
  'egress.set': { done: 'change outside access', doing: 'changing outside access' },
  'approval.create': { done: 'ask a person', doing: 'asking you' },
  'approval.withdraw': { done: 'withdraw a request', doing: 'withdrawing a request' },
  'approval.approve': { done: 'approve a request', doing: 'approving a request' },
  'approval.deny': { done: 'deny a request', doing: 'denying a request' },
  'grant.set': { done: 'set a standing approval', doing: 'setting a standing approval' },
  'grant.revoke': { done: 'revoke a standing approval', doing: 'revoking a standing approval' },
  'file.copyOut': { done: 'copy files out', doing: 'copying files out' },
  'branch.export': { done: 'export to a repository', doing: 'exporting to a repository' },
  'scope.allow': { done: 'give an agent workspaces', doing: 'giving an agent workspaces' },
  'scope.revoke': { done: "take an agent's workspaces back", doing: "taking an agent's workspaces back" },
  'desktop.move': { done: 'move the pointer', doing: 'moving the pointer' },
  'desktop.click': { done: 'click', doing: 'clicking' },
  'desktop.button': { done: 'press a mouse button', doing: 'pressing a mouse button' },
  'desktop.drag': { done: 'drag', doing: 'dragging' },
  'desktop.scroll': { done: 'scroll', doing: 'scrolling' },
  'desktop.key': { done: 'press keys', doing: 'pressing keys' },
  'desktop.type': { done: 'type', doing: 'typing' },
  'desktop.holdKey': { done: 'hold keys', doing: 'holding keys' },
  'desktop.openUrl': { done: 'open an address', doing: 'opening an address' },
  'desktop.launch': { done: 'start a program', doing: 'starting a program' },
};

export function callDone(method: string): string {
  return CALLS[method as MethodName]?.done ?? method;
}

/** Never a raw method name: a person reads it on the branch's row. */
export function callDoing(method: string): string {
  return CALLS[method as MethodName]?.doing ?? 'working';
}

/** What an agent is doing on a desktop, by the kind of its last computer-use call. */
export const DESKTOP_DOING: Record<DesktopActionKind, string> = {
  screenshot: 'looking at the screen',
  zoom: 'looking closely at the screen',
  cursor: 'finding the pointer',
  move: 'moving the pointer',
  click: 'clicking',
  button: 'pressing a mouse button',
  drag: 'dragging',
  scroll: 'scrolling',
  key: 'pressing keys',
  hold_key: 'holding keys',
  type: 'typing',
  wait: 'waiting for the screen',
  windows: 'listing the windows',
  open_url: 'opening a web page',
  launch: 'starting a program',
};
