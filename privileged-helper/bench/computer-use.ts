// The computer-use section of the benchmark, on the standard desktop through
// the helper's socket, as an agent uses it:
//   screenshot       desktop.screenshot of the whole screen, request to reply
//   action → frame   desktop.key typing one character into the start page's
//                    note, until a second VNC client (this process's own RFB
//                    session, like a person's viewer, but straight to the
//                    branch's server: the bench is root) receives the frame in
//                    which the page has taken the note's new colour
//   PNG encode       the helper's encoder on a full-screen frame, in process
//   MCP calls        the computer tool's screenshot and zoom, and the windows
//                    tool, through `grove mcp` as an MCP client calls them
//                    (mcp-roundtrip.ts)
import { encodePng } from '../src/desktop/image.js';
import { RfbSession } from '../src/desktop/rfb-session.js';
import { VNC_PORT } from '../src/workspaces/runtime.js';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { noteColour, type Rgb } from '../../main/src/agent/note-colour.js';
import type { Workspace } from '../src/protocol/entities.js';
import { measureMcp } from './mcp-roundtrip.js';
import type { ComputerUse, Percentiles } from './result-schema.js';
import { percentiles, round } from './stats.js';

/** The start page's note field, and a point of its top section away from the note and the pointer. */
const NOTE = { x: 360, y: 236 };
const MARKER = { x: 600, y: 560 };
const FRAME_TIMEOUT_MS = 5000;

export async function measureComputerUse(c: HelperClient, ws: Workspace, samples: number, log: (msg: string) => void): Promise<ComputerUse> {
  const viewer = await RfbSession.open(ws.address, VNC_PORT, 10_000);
  const errors: string[] = [];
  try {
    const shots = await screenshots(c, ws, samples);
    log(`screenshot: p50 ${shots.ms.p50} ms, ${shots.kib} KiB`);
    const frames = await actionToFrame(c, ws, viewer, samples, errors);
    log(`key press → changed frame: p50 ${frames.p50} ms (${errors.length} failed)`);
    const encode = await pngEncode(viewer, samples);
    log(`PNG encode of the full screen: p50 ${encode.p50} ms`);
    const mcp = await measureMcp(c.socketPath, ws.id, samples);
    log(`MCP calls through grove mcp: screenshot p50 ${mcp.screenshotMs.p50} ms, zoom p50 ${mcp.zoomMs.p50} ms, windows p50 ${mcp.windowsMs.p50} ms`);
    const screen = { width: viewer.framebuffer.width, height: viewer.framebuffer.height };
    return {
      screenshotMs: shots.ms,
      screenshotKiB: shots.kib,
      actionToFrameMs: frames,
      pngEncodeMs: encode,
      mcpScreenshotMs: mcp.screenshotMs,
      mcpZoomMs: mcp.zoomMs,
      mcpWindowsMs: mcp.windowsMs,
      screen,
      samples,
      errors,
    };
  } finally {
    viewer.close();
  }
}

async function screenshots(c: HelperClient, ws: Workspace, samples: number): Promise<{ ms: Percentiles; kib: number }> {
  await c.request('desktop.screenshot', { workspace: ws.id }); // the session opens outside the timing
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const shot = await c.request('desktop.screenshot', { workspace: ws.id });
    times.push(performance.now() - t0);
    bytes = (shot.png.length * 3) / 4;
  }
  return { ms: percentiles(times), kib: round(bytes / 1024) };
}

/** Types a growing note one character at a time; each key press changes the whole top section's colour. */
async function actionToFrame(c: HelperClient, ws: Workspace, viewer: RfbSession, samples: number, errors: string[]): Promise<Percentiles> {
  await c.request('desktop.click', { workspace: ws.id, ...NOTE });
  await c.request('desktop.key', { workspace: ws.id, keys: 'ctrl+a BackSpace' });
  const times: number[] = [];
  let note = '';
  for (let i = 0; i < samples; i++) {
    const char = String.fromCharCode(0x61 + (i % 26));
    const shown = frameShowing(viewer, noteColour(note + char));
    const t0 = performance.now();
    await c.request('desktop.key', { workspace: ws.id, keys: char });
    try {
      times.push((await shown) - t0);
      note += char;
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  await c.request('desktop.key', { workspace: ws.id, keys: 'ctrl+a BackSpace' });
  return percentiles(times);
}

/** Resolves with the time the viewer received the first frame whose marker pixel has the colour. */
function frameShowing(viewer: RfbSession, rgb: Rgb): Promise<number> {
  const fb = viewer.framebuffer;
  const shows = () => {
    const i = (MARKER.y * fb.width + MARKER.x) * 4;
    return fb.pixels[i] === rgb[0] && fb.pixels[i + 1] === rgb[1] && fb.pixels[i + 2] === rgb[2];
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no frame showing rgb(${rgb.join(',')}) within ${FRAME_TIMEOUT_MS} ms`));
    }, FRAME_TIMEOUT_MS);
    const stop = viewer.onChange(() => {
      if (!shows()) return;
      clearTimeout(timer);
      stop();
      resolve(performance.now());
    });
  });
}

async function pngEncode(viewer: RfbSession, samples: number): Promise<Percentiles> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await encodePng(viewer.framebuffer);
    times.push(performance.now() - t0);
  }
  return percentiles(times);
}
