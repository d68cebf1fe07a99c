/**
 * The command line as the README shows it, from the clone: `npx carrier-sync --version` and
 * `--help` are carrier-sync's, not npm's. npx gives every argument after the first positional one
 * to the command; `npm exec carrier-sync --version` (no `--`) would give `--version` to npm and
 * print npm's version, which is why the README shows `npx`. Run with a fresh npm cache and home,
 * as a new user's first run, and from a subfolder of the clone too.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const home = mkdtempSync(join(tmpdir(), 'carrier-sync-npx-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** What the README's command blocks show as `npx carrier-sync …` with --version or --help. */
function readmeCommands(): string[][] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.startsWith('npx carrier-sync ') && /(^| )(--version|--help)( |$)/.test(line))
    .map((line) => line.split(/ +/).slice(1));
}

async function npx(args: string[], cwd = ROOT): Promise<{ stdout: string; stderr: string }> {
  // A new user's environment: no npm_* variables of the test runner's npm, an empty npm cache.
  const env = { PATH: process.env['PATH'], HOME: home, npm_config_cache: join(home, 'npm-cache'), npm_config_update_notifier: 'false', LANG: 'C.UTF-8' };
  return promisify(execFile)('npx', args, { cwd, env: env as NodeJS.ProcessEnv, timeout: 45_000 });
}

describe("the README's commands, run with npx from the clone", () => {
  it('the README shows --version and --help with npx', () => {
    expect(readmeCommands()).toEqual(
      expect.arrayContaining([
        ['carrier-sync', '--version'],
        ['carrier-sync', '--help'],
      ]),
    );
  });

  it("npx carrier-sync --version prints carrier-sync's version, not npm's", async () => {
    const { stdout: npmVersion } = await promisify(execFile)('npm', ['--version']);
    const built = statSync(join(ROOT, 'dist', 'src', 'main.js')).mtimeMs;
    const { stdout } = await npx(['carrier-sync', '--version']);
    expect(stdout).toBe(`${VERSION}\n`);
    expect(stdout.trim()).not.toBe(npmVersion.trim());
    // npx's first run links the clone into its cache and runs its `prepare`: an up-to-date build is
    // not built again (a whole tsc build, ~35 s of CPU before the version, rewriting dist/ under
    // whatever is running it).
    expect(statSync(join(ROOT, 'dist', 'src', 'main.js')).mtimeMs).toBe(built);
  });

  it("npx carrier-sync --help prints carrier-sync's commands; a command's --help its own", async () => {
    const top = await npx(['carrier-sync', '--help']);
    expect(top.stdout).toMatch(/^Usage: carrier-sync /);
    expect(top.stdout).toContain('history');
    expect(top.stdout).not.toContain('npm <command>');
    const sub = await npx(['carrier-sync', 'history', '--help']);
    expect(sub.stdout).toMatch(/^Usage: carrier-sync history /);
  });

  it('works from a subfolder of the clone', async () => {
    const { stdout } = await npx(['carrier-sync', '--version'], join(ROOT, 'docs'));
    expect(stdout).toBe(`${VERSION}\n`);
  });
});
