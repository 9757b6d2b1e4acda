// What the Electron shell's preload gives the page (electron/preload.cts);
// in a browser there is no shell, and the page asks for paths as text.
interface GroveShell {
  kind: 'electron';
  /** The system's folder dialog: the folder the person picked, or null if they cancelled. */
  pickFolder?: () => Promise<string | null>;
}

/** The shell's folder dialog, when the app runs in one that has it. */
export function folderPicker(): (() => Promise<string | null>) | null {
  return (globalThis as { groveShell?: GroveShell }).groveShell?.pickFolder ?? null;
}
