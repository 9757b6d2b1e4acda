import { describe, expect, it } from 'vitest';
import { isMethodName, methods } from '../../src/protocol/methods.js';
import { Id, ID_PATTERN, Name, NAME_PATTERN, Port, WorkspaceRef } from '../../src/protocol/names.js';

const accepts = (schema: { safeParse: (v: unknown) => { success: boolean } }, v: unknown) => schema.safeParse(v).success;

describe('Name', () => {
  it.each([['a'], ['0'], ['ok-name'], ['a1-b2-c3'], ['a--b'], ['x'.repeat(32)], ['deadbeef']])('accepts %j', (name) => {
    expect(accepts(Name, name)).toBe(true);
    expect(NAME_PATTERN.test(name)).toBe(true);
  });

  it.each([
    ['../x', 'path traversal'],
    ['x/y', 'a slash'],
    ['-rf', 'a leading dash (option injection)'],
    ['name-', 'a trailing dash'],
    ['-', 'a lone dash'],
    ['a b', 'whitespace'],
    [' a', 'leading whitespace'],
    ['a\n', 'a trailing newline'],
    ['a\0b', 'a NUL'],
    ['A', 'upper case'],
    ['okName', 'mixed case'],
    ['a_b', 'an underscore'],
    ['a.b', 'a dot'],
    ['', 'the empty string'],
    ['x'.repeat(33), '33 characters'],
    ['é', 'non-ASCII letters'],
  ])('refuses %j (%s)', (name) => {
    expect(accepts(Name, name)).toBe(false);
    expect(NAME_PATTERN.test(name)).toBe(false);
  });

  it('refuses non-strings', () => {
    expect(accepts(Name, 1)).toBe(false);
    expect(accepts(Name, null)).toBe(false);
    expect(accepts(Name, ['ok'])).toBe(false);
  });
});

describe('Id', () => {
  it('accepts exactly 8 lower-case hex digits', () => {
    expect(accepts(Id, '0123abcd')).toBe(true);
    expect(ID_PATTERN.test('ffffffff')).toBe(true);
  });

  it.each([['0123abc'], ['0123abcde'], ['0123ABCD'], ['0123abcg'], [''], ['../../../x']])('refuses %j', (id) => {
    expect(accepts(Id, id)).toBe(false);
  });
});

describe('WorkspaceRef', () => {
  it('accepts an id or a name, and nothing that is neither', () => {
    expect(accepts(WorkspaceRef, '0123abcd')).toBe(true);
    expect(accepts(WorkspaceRef, 'my-workspace')).toBe(true);
    expect(accepts(WorkspaceRef, '../etc')).toBe(false);
    expect(accepts(WorkspaceRef, '--help')).toBe(false);
  });
});

describe('Port', () => {
  it('is an integer in 1..65535', () => {
    expect(accepts(Port, 1)).toBe(true);
    expect(accepts(Port, 65535)).toBe(true);
    expect(accepts(Port, 0)).toBe(false);
    expect(accepts(Port, 65536)).toBe(false);
    expect(accepts(Port, 80.5)).toBe(false);
    expect(accepts(Port, '80')).toBe(false);
  });
});

describe('method params schemas', () => {
  it('validates workspace.create and refuses bad names in it', () => {
    const p = methods['workspace.create'].params;
    expect(p.safeParse({ name: 'ok-name' }).success).toBe(true);
    expect(p.safeParse({ name: 'ok-name', image: 'desktop', ports: [8080] }).success).toBe(true);
    expect(p.safeParse({ name: '../x' }).success).toBe(false);
    expect(p.safeParse({ name: 'ok-name', image: 'my-tools' }).success).toBe(true);
    expect(p.safeParse({ name: 'ok-name', image: '../desktop' }).success).toBe(false);
    expect(p.safeParse({ name: 'ok-name', project: { hostPath: '/home/p/app', path: '/root/work' } }).success).toBe(true);
    expect(p.safeParse({ name: 'ok-name', project: { hostPath: 'relative/app' } }).success).toBe(false);
    expect(p.safeParse({ name: 'ok-name', project: { hostPath: '/a\0b' } }).success).toBe(false);
    expect(p.safeParse({ name: 'ok-name', ports: [0] }).success).toBe(false);
    expect(p.safeParse({ name: 'ok-name', ports: Array.from({ length: 17 }, (_, i) => 8000 + i) }).success).toBe(false);
    expect(p.safeParse({}).success).toBe(false);
  });

  it('takes image references of the transports Grove pulls from, and pushes to registries only', () => {
    const pull = methods['image.pull'].params;
    for (const ref of [
      'docker://127.0.0.1:5000/grove/tools:1',
      'docker://reg.example/app@sha256:' + 'a'.repeat(64),
      'oci-archive:/tmp/i.tar',
      'docker-archive:/tmp/d.tar',
      'oci:/tmp/layout',
    ]) {
      expect(pull.safeParse({ name: 'tools', ref }).success, ref).toBe(true);
    }
    for (const ref of ['--insecure-policy', 'docker-daemon:x', 'oci-archive:relative.tar', 'docker://', 'docker:// spaced', 'dir:/tmp/x']) {
      expect(pull.safeParse({ name: 'tools', ref }).success, ref).toBe(false);
    }
    const push = methods['image.push'].params;
    expect(push.safeParse({ name: 'tools', ref: 'docker://127.0.0.1:5000/grove/tools:1' }).success).toBe(true);
    expect(push.safeParse({ name: 'tools', ref: 'oci-archive:/etc/cron.d/x' }).success).toBe(false);
  });

  it.each([
    ['workspace.create', { name: 'ok', extra: 1 }],
    ['workspace.get', { workspace: 'ok', force: true }],
    ['workspace.delete', { workspace: 'ok', recursive: true }],
    ['host.doctor', { verbose: true }],
    ['workspace.list', { all: true }],
    ['exec.run', { workspace: 'ok', argv: ['true'], shell: true }],
    ['exec.write', { session: 's1', data: '', echo: false }],
    ['hello', { protocol: 1, client: { name: 'cli', kind: 'cli' }, token: 'x' }],
  ] as const)('%s refuses an unknown field', (method, params) => {
    const schema = methods[method].params;
    const result = schema.safeParse(params);
    expect(result.success).toBe(false);
    expect(result.error?.issues.some((i) => i.code === 'unrecognized_keys')).toBe(true);
  });

  it('refuses unknown fields in nested objects too', () => {
    const hello = methods.hello.params;
    expect(hello.safeParse({ protocol: 1, client: { name: 'cli', kind: 'cli' } }).success).toBe(true);
    expect(hello.safeParse({ protocol: 1, client: { name: 'cli', kind: 'cli', pid: 1 } }).success).toBe(false);
  });

  describe('exec.run argv', () => {
    const run = methods['exec.run'].params;
    const withArgv = (argv: unknown) => run.safeParse({ workspace: 'ok-name', argv });

    it('accepts a program and its arguments', () => {
      expect(withArgv(['ls', '-la', '/root']).success).toBe(true);
      // Arguments are passed without a shell, so a dash or spaces inside one are fine.
      expect(withArgv(['sh', '-c', 'echo a b']).success).toBe(true);
    });

    it('refuses an empty argv', () => {
      expect(withArgv([]).success).toBe(false);
    });

    it('refuses a NUL in any argument', () => {
      expect(withArgv(['ls\0', '/']).success).toBe(false);
      expect(withArgv(['ls', 'a\0b']).success).toBe(false);
    });

    it('refuses more than 256 arguments and over-long arguments', () => {
      expect(withArgv(Array.from({ length: 256 }, () => 'a')).success).toBe(true);
      expect(withArgv(Array.from({ length: 257 }, () => 'a')).success).toBe(false);
      expect(withArgv(['echo', 'x'.repeat(4096)]).success).toBe(true);
      expect(withArgv(['echo', 'x'.repeat(4097)]).success).toBe(false);
    });

    it('refuses non-string arguments', () => {
      expect(withArgv(['echo', 1]).success).toBe(false);
      expect(withArgv('echo hi').success).toBe(false);
    });

    it('checks env names and cwd', () => {
      expect(run.safeParse({ workspace: 'ok', argv: ['env'], env: { FOO_1: 'x' } }).success).toBe(true);
      expect(run.safeParse({ workspace: 'ok', argv: ['env'], env: { '1FOO': 'x' } }).success).toBe(false);
      expect(run.safeParse({ workspace: 'ok', argv: ['env'], env: { 'A=B': 'x' } }).success).toBe(false);
      expect(run.safeParse({ workspace: 'ok', argv: ['pwd'], cwd: '/tmp' }).success).toBe(true);
      expect(run.safeParse({ workspace: 'ok', argv: ['pwd'], cwd: 'tmp' }).success).toBe(false);
    });
  });

  it('exec.open makes argv optional but still refuses an empty one', () => {
    const open = methods['exec.open'].params;
    expect(open.safeParse({ workspace: 'ok', cols: 80, rows: 24 }).success).toBe(true);
    expect(open.safeParse({ workspace: 'ok', argv: [], cols: 80, rows: 24 }).success).toBe(false);
    expect(open.safeParse({ workspace: 'ok', cols: 0, rows: 24 }).success).toBe(false);
  });

  it('session ids are s followed by digits', () => {
    const close = methods['exec.close'].params;
    expect(close.safeParse({ session: 's12' }).success).toBe(true);
    expect(close.safeParse({ session: '12' }).success).toBe(false);
    expect(close.safeParse({ session: 's../1' }).success).toBe(false);
  });
});

describe('isMethodName', () => {
  it('knows the method table and nothing inherited from Object', () => {
    expect(isMethodName('workspace.create')).toBe(true);
    expect(isMethodName('exec.run')).toBe(true);
    expect(isMethodName('workspace.destroy')).toBe(false);
    expect(isMethodName('toString')).toBe(false);
    expect(isMethodName('__proto__')).toBe(false);
    expect(isMethodName('constructor')).toBe(false);
  });
});
