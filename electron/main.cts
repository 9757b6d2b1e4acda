// The Electron shell: one window on the controller, which runs in this
// process (the same code as `grove app --web`, on 127.0.0.1 with a per-launch
// secret). The window is sandboxed and isolated, has no Node, cannot navigate
// away or open windows, and gets no permission but notifications; its preload exposes one
// read-only fact and the system's folder dialog (PICK_FOLDER). Everything
// else the app does goes through the controller's API.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { app, BrowserWindow, dialog, ipcMain, session, shell, type IpcMainInvokeEvent } from 'electron';

type StartApp = (opts: { socketPath?: string; rendererDir?: string }) => Promise<{ web: { url: string; launchUrl: string }; stop(): Promise<void> }>;

// Built by `npm run build:electron` next to this file (an esbuild bundle of main/src/app/start.ts).
const CONTROLLER = path.join(__dirname, 'controller.mjs');
const RENDERER = path.join(__dirname, '..', '..', 'renderer', 'dist');
/** The preload's one call (preload.cts names it too). */
const PICK_FOLDER = 'grove:pick-folder';
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

let stopController: (() => Promise<void>) | null = null;
/** The controller's origin: the only one the window may show. */
let controllerOrigin = '';

app.enableSandbox();

async function main(): Promise<void> {
  await app.whenReady();
  // eslint-disable-next-line no-restricted-syntax -- the controller bundle's path is known only at run time (next to this file)
  const { startApp } = (await import(pathToFileURL(CONTROLLER).href)) as { startApp: StartApp };
  const running = await startApp({ socketPath: process.env.GROVE_SOCKET, rendererDir: process.env.GROVE_RENDERER_DIR ?? RENDERER });
  stopController = () => running.stop();
  controllerOrigin = new URL(running.web.url).origin;

  ipcMain.handle(PICK_FOLDER, pickFolder);
  // Notifications only: a request that arrives while the window is in the background is announced.
  session.defaultSession.setPermissionRequestHandler((_wc, permission, callback) => callback(permission === 'notifications'));
  session.defaultSession.setPermissionCheckHandler((_wc, permission) => permission === 'notifications');
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } });
  });

  const win = new BrowserWindow({
    width: 1440,
    height: 900,
    title: 'Grove',
    show: false,
    webPreferences: {
      preload: path.join(__dirname, 'preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webviewTag: false,
      spellcheck: false,
    },
  });
  win.once('ready-to-show', () => win.show());
  await win.loadURL(running.web.launchUrl);
}

// Every web contents: no navigation off the controller's origin, no new
// windows (http(s) links open in the person's browser), no <webview>.
app.on('web-contents-created', (_event, contents) => {
  contents.on('will-navigate', (event, url) => {
    if (!sameOrigin(url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    if (/^https:\/\//.test(url)) {
      void shell.openExternal(url).catch((err: unknown) => console.error(`Grove could not open ${url} in the browser: ${(err as Error).message}`));
    }
    return { action: 'deny' };
  });
});

/** A folder the person picks in the system's dialog, for the app's own page only; null if they cancel. */
async function pickFolder(event: IpcMainInvokeEvent): Promise<string | null> {
  const win = BrowserWindow.fromWebContents(event.sender);
  if (!win || !sameOrigin(event.senderFrame?.url ?? '')) return null;
  const picked = await dialog.showOpenDialog(win, { title: 'Choose a folder', properties: ['openDirectory'] });
  return picked.canceled ? null : (picked.filePaths[0] ?? null);
}

function sameOrigin(url: string): boolean {
  try {
    return controllerOrigin !== '' && new URL(url).origin === controllerOrigin;
  } catch {
    return false;
  }
}

app.on('window-all-closed', () => app.quit());
app.on('will-quit', () => void stopController?.());

main().catch((err: unknown) => {
  console.error(`Grove could not start: ${(err as Error).message}`);
  app.exit(1);
});
