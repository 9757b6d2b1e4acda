// The window's preload (sandboxed, so CommonJS): it exposes one read-only
// fact and nothing that reaches Node or Electron's IPC. The app talks to its
// controller over the same WebSocket API as in a browser.
import { contextBridge } from 'electron';

contextBridge.exposeInMainWorld('groveShell', Object.freeze({ kind: 'electron' as const }));
