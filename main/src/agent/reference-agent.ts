// The reference agent: scripted and deterministic (no model), it drives Grove
// only through the tools of `grove mcp`, as any MCP-capable agent would, and
// checks what it sees on the screen (the start page's colour, no OCR):
//   1. a screenshot of the branch shows the start page;
//   2. it forks the branch into 3;
//   3. in each child it clicks into the page's note field and types its own text;
//   4. a screenshot of each child shows the colour of that child's text;
//   5. in the third child it zooms into the page (the colour, at full
//      resolution), lists the windows, writes a web page into the branch
//      (upload), serves it there (launch), opens it (open_url), and finds
//      Chromium's window showing its title;
//   6. it asks a person to promote the first child and to discard the second,
//      and (with --wait-decisions) waits that long for the decisions, in the
//      one call that asks: Grove answers it the moment a person decides.
// A JSON report (with how many times it called each tool) goes to stdout,
// progress to stderr; it exits 1 when a check fails. A denial is no failure
// of its own: it reports it.
//
//   tsx main/src/agent/reference-agent.ts --branch NAME [--socket PATH] [--wait-decisions SECONDS]
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Actor } from '../../../privileged-helper/src/protocol/identity.js';
import { callTool, connectGroveMcp, pngOf, textOf } from '../mcp/client.js';
import { EMPTY_NOTE_RGB, noteColour, type Rgb } from './note-colour.js';
import { NOTE_FIELD, pageColour, shareOf, shows, type ColourSeen } from './start-page.js';

/** One text per child; different texts, so different colours. */
const NOTES = ['try a lighter header', 'try a bolder call to action', 'try a calmer palette'];
/** How long a page may take to show a colour (a desktop that just started draws Chromium late). */
const SEE_TIMEOUT_MS = 90_000;
/** A part of the page's top section, away from the note and the pointer, and the width it is zoomed to. */
const ZOOM = { region: { x: 300, y: 400, width: 100, height: 50 }, width: 400 };
/** The page the agent serves in a branch and opens in its browser, known by its title. */
const PAGE = { dir: '/tmp/grove-reference-agent', port: 8765, title: 'grove reference agent page' };
/** How long the browser may take to show the page's title. */
const PAGE_TIMEOUT_MS = 30_000;

interface Options {
  branch: string;
  socket?: string;
  waitDecisionsS: number;
}

interface ChildReport {
  id: string;
  name: string;
  text: string;
  expected: Rgb;
  seen: ColourSeen | null;
}

interface LookReport {
  branch: string;
  /** The share of the zoomed picture in the branch's page colour. */
  zoomShare: number;
  zoomSize: { width: number; height: number };
  windows: { app: string; title: string; focused: boolean }[];
  /** The window that showed the page opened with open_url. */
  opened: { app: string; title: string } | null;
}

interface RequestReport {
  request: string;
  branch: { id: string; name: string };
  state: string;
  answer: string;
  /** The tool marked its answer an error (a denial, an expiry, a failure). */
  isError: boolean;
}

interface Report {
  ok: boolean;
  failure: string | null;
  branch: string;
  you: Pick<Actor, 'role' | 'user' | 'uid'> | null;
  startPage: ColourSeen | null;
  children: ChildReport[];
  look: LookReport | null;
  requests: { promote: RequestReport | null; discard: RequestReport | null };
  /** Tool calls it made, by tool. */
  calls: Record<string, number>;
}

const log = (message: string) => process.stderr.write(`reference agent: ${message}\n`);

async function main(): Promise<void> {
  const opts = parseOptions();
  const report: Report = {
    ok: false,
    failure: null,
    branch: opts.branch,
    you: null,
    startPage: null,
    children: [],
    look: null,
    requests: { promote: null, discard: null },
    calls: {},
  };
  let client: Client | null = null;
  try {
    client = countingCalls(await connectGroveMcp({ name: 'grove-reference-agent', socketPath: opts.socket }), report.calls);
    await work(client, opts, report);
    report.ok = true;
  } catch (err) {
    report.failure = (err as Error).message;
    log(`failed: ${report.failure}`);
  } finally {
    await client?.close();
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = report.ok ? 0 : 1;
}

function parseOptions(): Options {
  const { values } = parseArgs({ options: { branch: { type: 'string' }, socket: { type: 'string' }, 'wait-decisions': { type: 'string' } } });
  if (!values.branch) throw new Error('usage: reference-agent.ts --branch NAME [--socket PATH] [--wait-decisions SECONDS]');
  const waitDecisionsS = Number(values['wait-decisions'] ?? 0);
  if (!(waitDecisionsS >= 0)) throw new Error(`--wait-decisions takes seconds, not '${values['wait-decisions']}'`);
  return { branch: values.branch, socket: values.socket, waitDecisionsS };
}

async function work(client: Client, opts: Options, report: Report): Promise<void> {
  report.you = ((await callTool(client, 'list_branches', {})).structuredContent as { you: Report['you'] }).you;
  log(`Grove takes me for ${report.you?.role} ${report.you?.user}; looking at ${opts.branch}`);
  report.startPage = await expectPage(client, { id: opts.branch, name: opts.branch }, EMPTY_NOTE_RGB, 'the start page');

  log(`forking ${opts.branch} into ${NOTES.length}`);
  const forked = (await callTool(client, 'fork', { branch: opts.branch, copies: NOTES.length })).structuredContent as {
    children: { id: string; name: string }[];
  };
  report.children = forked.children.map((c, i) => ({ id: c.id, name: c.name, text: NOTES[i]!, expected: noteColour(NOTES[i]!), seen: null }));

  for (const child of report.children) await writeNote(client, child);
  for (const child of report.children) child.seen = await expectPage(client, child, child.expected, `the colour of "${child.text}"`);

  report.look = await lookAround(client, report.children[2]!);

  const [keep, drop] = report.children;
  if (opts.waitDecisionsS > 0) log(`asking a person, waiting up to ${opts.waitDecisionsS} s for each decision`);
  [report.requests.promote, report.requests.discard] = await Promise.all([
    ask(client, opts.waitDecisionsS, 'request_promote', {
      branch: keep!.id,
      reason: `${keep!.name} holds the note "${keep!.text}", checked on its screen; I would like it as the main line (the current main line keeps running as a branch)`,
      old_main: 'keep',
    }),
    ask(client, opts.waitDecisionsS, 'request_discard', { branch: drop!.id, reason: `${drop!.name} ("${drop!.text}") is the idea I would drop` }),
  ]);
}

/** Counts every tool call the agent makes into `calls`. */
function countingCalls(client: Client, calls: Record<string, number>): Client {
  const callTool = client.callTool.bind(client);
  client.callTool = (params, ...rest) => {
    calls[params.name] = (calls[params.name] ?? 0) + 1;
    return callTool(params, ...rest);
  };
  return client;
}

/** Screenshots the branch until its page shows `rgb` (apps draw a moment after the input); throws if it never does. */
async function expectPage(client: Client, branch: { id: string; name: string }, rgb: Rgb, what: string): Promise<ColourSeen> {
  const deadline = Date.now() + SEE_TIMEOUT_MS;
  for (;;) {
    const seen = pageColour(pngOf(await callTool(client, 'computer', { branch: branch.id, action: 'screenshot' })));
    if (shows(seen, rgb)) {
      log(`${branch.name} shows ${what}: rgb(${rgb.join(',')})`);
      return seen;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${branch.name} does not show ${what}: expected rgb(${rgb.join(',')}) over the page, saw rgb(${seen.rgb.join(',')}) on ${Math.round(seen.share * 100)}% of it`,
      );
    }
    await callTool(client, 'computer', { branch: branch.id, action: 'wait', duration: 2 });
  }
}

/** Clicks into the note field, selects what it holds and types the child's text over it. */
async function writeNote(client: Client, child: ChildReport): Promise<void> {
  log(`${child.name}: typing "${child.text}" into the note`);
  await callTool(client, 'computer', { branch: child.id, action: 'left_click', coordinate: [NOTE_FIELD.x, NOTE_FIELD.y] });
  await callTool(client, 'computer', { branch: child.id, action: 'key', text: 'ctrl+a' });
  await callTool(client, 'computer', { branch: child.id, action: 'type', text: child.text });
}

/** Zooms into the child's page, lists its windows, and opens a page of its own in its browser. */
async function lookAround(client: Client, child: ChildReport): Promise<LookReport> {
  const zoomed = await callTool(client, 'computer', { branch: child.id, action: 'zoom', ...ZOOM });
  const size = zoomed.structuredContent as { width: number; height: number };
  const zoomShare = shareOf(pngOf(zoomed), child.expected);
  if (zoomShare < 0.8) throw new Error(`a zoom into ${child.name}'s page shows rgb(${child.expected.join(',')}) on only ${Math.round(zoomShare * 100)}% of it`);
  log(`${child.name}: zoomed ${ZOOM.region.width}x${ZOOM.region.height} to ${size.width}x${size.height}, the page's colour on ${Math.round(zoomShare * 100)}%`);

  const windows = await windowsOf(client, child.id);
  log(`${child.name}: windows ${windows.map((w) => `${w.app}${w.focused ? ' (focused)' : ''}`).join(', ')}`);

  const title = `${PAGE.title} ${child.name}`;
  await callTool(client, 'upload', { branch: child.id, path: `${PAGE.dir}/index.html`, text: `<!doctype html><title>${title}</title><h1>${title}</h1>\n` });
  await callTool(client, 'launch', {
    branch: child.id,
    command: ['python3', '-m', 'http.server', String(PAGE.port), '--bind', '127.0.0.1', '--directory', PAGE.dir],
  });
  const serving = `for i in $(seq 100); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:${PAGE.port}/")' 2>/dev/null && exit 0; sleep 0.1; done; exit 1`;
  if ((await callTool(client, 'exec', { branch: child.id, command: serving })).structuredContent?.exitCode !== 0)
    throw new Error(`the page server in ${child.name} did not answer`);
  await callTool(client, 'open_url', { branch: child.id, url: `http://127.0.0.1:${PAGE.port}/` });
  const deadline = Date.now() + PAGE_TIMEOUT_MS;
  for (;;) {
    const showing = (await windowsOf(client, child.id)).find((w) => w.title.includes(title));
    if (showing) {
      log(`${child.name}: ${showing.app} shows "${showing.title}"`);
      return {
        branch: child.name,
        zoomShare,
        zoomSize: { width: size.width, height: size.height },
        windows,
        opened: { app: showing.app, title: showing.title },
      };
    }
    if (Date.now() > deadline) throw new Error(`no window of ${child.name} showed "${title}" within ${PAGE_TIMEOUT_MS / 1000} s of open_url`);
    await callTool(client, 'computer', { branch: child.id, action: 'wait', duration: 0.5 });
  }
}

async function windowsOf(client: Client, branch: string): Promise<LookReport['windows']> {
  const listed = (await callTool(client, 'windows', { branch })).structuredContent as { windows: LookReport['windows'] };
  return listed.windows.map(({ app, title, focused }) => ({ app, title, focused }));
}

/**
 * Makes a request and waits up to `waitS` for the decision in the same call
 * (0: not at all), taking progress notifications meanwhile so the client's
 * own timeout does not end it. A denial comes back as an error result: the
 * report says so.
 */
async function ask(
  client: Client,
  waitS: number,
  tool: 'request_promote' | 'request_discard',
  args: { branch: string; reason: string; old_main?: string },
): Promise<RequestReport> {
  const result = (await client.callTool({ name: tool, arguments: { ...args, wait_seconds: waitS } }, undefined, {
    onprogress: (p) => log(`${tool}: ${p.message ?? 'still waiting'}`),
    resetTimeoutOnProgress: true,
  })) as CallToolResult;
  const data = result.structuredContent as Omit<RequestReport, 'answer' | 'isError'> | undefined;
  if (!data) throw new Error(`${tool}: ${textOf(result)}`); // not a request's answer: the call itself failed
  const report = { request: data.request, branch: data.branch, state: data.state, answer: textOf(result), isError: result.isError === true };
  log(`${tool} ${report.branch.name}: ${report.answer}`);
  return report;
}

main().catch((err: unknown) => {
  process.stderr.write(`reference agent: ${(err as Error).message}\n`);
  process.exitCode = 2;
});
