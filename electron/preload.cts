// The window's preload (sandboxed, so CommonJS and self-contained): it
// exposes one read-only fact and one narrow call, the system's folder dialog
// (for a project folder), and nothing else of Node or Electron's IPC. The app
// talks to its controller over the same WebSocket API as in a browser.
import { contextBridge, ipcRenderer } from 'electron';

/** The one IPC channel; main.cts answers it (a sandboxed preload cannot import a shared file). */
const PICK_FOLDER = 'grove:pick-folder';

contextBridge.exposeInMainWorld(
  'groveShell',
  Object.freeze({
    kind: 'electron' as const,
    /** The folder the person picked, or null if they cancelled. */
    pickFolder: async (): Promise<string | null> => {
      const picked: unknown = await ipcRenderer.invoke(PICK_FOLDER);
      return typeof picked === 'string' ? picked : null;
    },
  }),
);
