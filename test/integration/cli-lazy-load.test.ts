/**
 * `--help`, `--version` and a mistyped command answer without loading the settings' schema (zod,
 * yaml, config/schema.ts: ~0.3 s of a 0.86 s `--help`, issue 46, sixteenth session); a command that
 * reads the settings loads them. Run on the built binary in a fresh node, with a module hook that
 * names each ES module as it loads.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOOK = `data:text/javascript,export async function load(url, context, next) { process._rawDebug('LOADED ' + url); return next(url, context); }`;
const REGISTER = `data:text/javascript,import { register } from 'node:module'; register(${JSON.stringify(HOOK)});`;
const SETTINGS = /node_modules\/zod\/|node_modules\/yaml\/|dist\/src\/config\/(schema|load)\.js/;

function loaded(args: string[]): { status: number | null; modules: string[] } {
  const result = spawnSync(process.execPath, ['--import', REGISTER, join(ROOT, 'dist', 'src', 'main.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], LANG: 'C.UTF-8' },
  });
  const modules = result.stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED '))
    .map((line) => line.slice('LOADED '.length));
  return { status: result.status, modules };
}

describe('what a command line loads', () => {
  it.each(['--help', '--version', 'history --help', 'stauts'])('carrier-sync %s loads no settings schema', (line) => {
    const { modules } = loaded(line.split(' '));
    expect(modules.length, 'the hook saw the modules').toBeGreaterThan(10);
    expect(modules.filter((url) => SETTINGS.test(url))).toEqual([]);
  });

  it('a command that reads the settings loads them', () => {
    const { status, modules } = loaded(['config', 'check', '--json']);
    expect(status).toBe(0);
    expect(modules.filter((url) => SETTINGS.test(url)).length).toBeGreaterThan(0);
  });
});
