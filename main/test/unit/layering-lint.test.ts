// The layering rules of eslint.config.js, run through ESLint's own API on
// small snippets placed where product code lives: dynamic import() must be
// held to the same graph as static imports.
import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '../../..');
let eslint: ESLint;

/** The messages of the layering rules for `code` as if it were the file at `file` (repository-relative). */
async function layeringMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-syntax' || m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('layering lint', () => {
  beforeAll(() => {
    // Without the typed rules: these need no type information, and a snippet's file need not exist in a tsconfig.
    eslint = new ESLint({ cwd: REPO, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('forbids a dynamic import of the bench or the tests from product code', async () => {
    expect(await layeringMessages('main/src/cli/grove.ts', "export const b = await import('../../../privileged-helper/bench/bench.js');\n")).toEqual([
      'product code never imports tests, end-to-end specs or benchmarks',
    ]);
    expect(await layeringMessages('privileged-helper/src/daemon.ts', "export const h = await import('../test/system/helper-process.js');\n")).toEqual([
      'product code never imports tests, end-to-end specs or benchmarks',
    ]);
  });

  it("forbids a dynamic import of another package's internals", async () => {
    const [message] = await layeringMessages('main/src/cli/grove.ts', "export const f = await import('../../../privileged-helper/src/branches/fork.js');\n");
    expect(message).toMatch(/use only its contract/);
    const [up] = await layeringMessages('privileged-helper/src/daemon.ts', "export const c = await import('../../main/src/cli/context.js');\n");
    expect(up).toMatch(/the helper is the bottom layer/);
    const [ui] = await layeringMessages('renderer/src/App.tsx', "export const m = await import('../../main/src/app/start.js');\n");
    expect(ui).toMatch(/only through main\/src\/api\//);
  });

  it('forbids a dynamic import whose module is not written literally', async () => {
    expect(await layeringMessages('main/src/cli/grove.ts', "const where = '../x.js';\nexport const m = await import(where);\n")).toEqual([
      'name the module of a dynamic import literally, so lint can check the layering',
    ]);
  });

  it("lets product code import its own package and the helper's contract lazily", async () => {
    expect(await layeringMessages('main/src/cli/grove.ts', "export const s = await import('../mcp/server.js');\n")).toEqual([]);
    expect(await layeringMessages('main/src/cli/grove.ts', "export const p = await import('../../../privileged-helper/src/protocol/entities.js');\n")).toEqual(
      [],
    );
  });

  it('holds static imports to the same rules', async () => {
    const code = "export { runBench } from '../../../privileged-helper/bench/bench.js';\nimport '../../../privileged-helper/test/system/leftovers.js';\n";
    const messages = await layeringMessages('main/src/cli/grove.ts', code);
    expect(messages).toHaveLength(2);
    for (const m of messages) expect(m).toMatch(/product code never imports tests/);
  });
});
