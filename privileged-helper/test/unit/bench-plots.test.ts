import { describe, expect, it } from 'vitest';
import { benchSvg, escapeXml, niceMax } from '../../bench/plots.js';
import { sampleResult } from './bench-result-fixture.js';

/** Every opened element is closed, in order (self-closing ones aside). */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (!closing) stack.push(name!);
    else if (stack.pop() !== name) return false;
  }
  return stack.length === 0;
}

describe('bench plots', () => {
  it('draws the four panels as well-formed SVG', () => {
    const svg = benchSvg(sampleResult());
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(balanced(svg)).toBe(true);
    for (const title of ['Fork → first frame by stage', 'Fan-out: total time', 'Fan-out: PSS of all copies', 'Inherited read latency']) {
      expect(svg).toContain(title);
    }
    expect(svg).toContain('naive-overlay');
    expect(svg).toContain('stroke-dasharray'); // settled PSS is dashed
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
  });

  it("draws the agent loop's wait and total per strategy when the run measured it, and no panel when not", () => {
    const r = sampleResult();
    const svg = benchSvg(r);
    expect(svg).toContain('Agent loop: waiting on the workspace, and in all');
    for (const s of r.agentLoop!.strategies) expect(svg).toContain(`>${s.strategy}</text>`);
    expect(balanced(svg)).toBe(true);
    expect(benchSvg({ ...r, agentLoop: null })).not.toContain('Agent loop');
  });

  it('draws one point per measured value', () => {
    const r = sampleResult();
    const circles = (svg: string) => svg.match(/<circle /g)?.length ?? 0;
    // fan-out: 4 sizes × (2 time series + 4 PSS series); reads: 3 depths × 2 layouts
    expect(circles(benchSvg(r))).toBe(4 * 6 + 3 * 2);
  });

  it('says "not measured" for an empty panel instead of drawing nothing', () => {
    const r = sampleResult();
    r.grove.fanout = [];
    r.criu.fanout = [];
    r.grove.stages = {};
    r.criu.stages = {};
    const svg = benchSvg(r);
    expect(svg.match(/not measured/g)).toHaveLength(2);
    expect(balanced(svg)).toBe(true);
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
  });

  it('rounds an axis up to 1, 2 or 5 × 10^k', () => {
    expect(niceMax(0)).toBe(1);
    expect(niceMax(3)).toBe(5);
    expect(niceMax(420)).toBe(500);
    expect(niceMax(1000)).toBe(1000);
    expect(niceMax(1001)).toBe(2000);
    expect(niceMax(0.03)).toBeCloseTo(0.05);
  });

  it('escapes text', () => {
    expect(escapeXml(`a<b & "c"`)).toBe('a&#60;b &#38; &#34;c&#34;');
  });
});
