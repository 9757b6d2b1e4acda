// The dependency graph's rules, checked by `npm run lint:graph` (depcruise) on the
// resolved imports, type-only ones included: what eslint's layering rules
// (eslint.config.js) cannot see, cycles and edges by where a file really is.
const PRODUCT = '^(privileged-helper/src|main/src|renderer/src|electron)/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'a cycle makes two files one concern: move what both need into a third, lower one',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'product-never-imports-tests',
      comment: 'tests, end-to-end specs and the bench use the product, never the other way',
      severity: 'error',
      from: { path: PRODUCT },
      to: { path: '(^|/)(test|e2e|bench)/' },
    },
    {
      name: 'host-is-the-bottom',
      comment: "the helper's host/ wraps the system's tools: it knows the protocol's types and the helper's settings, nothing else of the helper",
      severity: 'error',
      from: { path: '^privileged-helper/src/host/' },
      to: { path: '^privileged-helper/src/', pathNot: '^privileged-helper/src/((host|protocol)/|config\\.ts$|tool-paths\\.ts$)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
  },
};
