/**
 * The other build of `--compare <ref>`: the ref's commit checked out in a git worktree of its own
 * under the system's temporary folder, `npm ci` there (its `prepare` compiles it), kept by commit
 * so a second comparison with the same ref starts at once. The worktree is detached: nothing is
 * committed there and no branch is made.
 */
import { execFile } from 'node:child_process';
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../../src/config/load.js';

const run = promisify(execFile);

export interface Build {
  /** What the report calls it: 'this tree' or the ref as given. */
  label: string;
  /** Full commit (this tree's HEAD, with "+ changes" when the tree has uncommitted changes). */
  commit: string;
  bin: string;
}

/** Where builds of other commits are kept (one worktree per commit). */
export const BUILDS_DIR = join(tmpdir(), 'carrier-sync-bench-builds');
/** Written last, so a build cut short (a signal during `npm ci`) is made again, not reused. */
const MARKER = '.bench-build-complete';

const git = async (args: string[], cwd = PACKAGE_ROOT): Promise<string> => (await run('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();

const exists = async (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** This tree's build (`npm run bench` compiled it just before). */
export async function thisBuild(): Promise<Build> {
  const head = await git(['rev-parse', 'HEAD']);
  const isDirty = (await git(['status', '--porcelain', '--untracked-files=no'])) !== '';
  return { label: 'this tree', commit: `${head.slice(0, 12)}${isDirty ? ' + changes' : ''}`, bin: join(PACKAGE_ROOT, 'dist', 'src', 'main.js') };
}

/** The ref's build, made (worktree, npm ci, compile) unless a complete one is kept. */
export async function buildOf(ref: string, progress: (message: string) => void): Promise<Build> {
  let commit: string;
  try {
    commit = await git(['rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`]);
  } catch (error) {
    throw new Error(`--compare: ${ref} is not a commit of this repository`, { cause: error });
  }
  const dir = join(BUILDS_DIR, commit);
  const bin = join(dir, 'dist', 'src', 'main.js');
  const build: Build = { label: ref, commit: commit.slice(0, 12), bin };
  if (await exists(join(dir, MARKER))) return build;
  await mkdir(BUILDS_DIR, { recursive: true });
  if (await exists(dir)) {
    progress(`--compare: removing an incomplete build of ${ref} in ${dir}`);
    await git(['worktree', 'remove', '--force', dir]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    await git(['worktree', 'prune']);
  }
  progress(`--compare: checking out ${ref} (${build.commit}) in ${dir}`);
  await git(['worktree', 'add', '--detach', dir, commit]);
  progress(`--compare: npm ci and compile in ${dir} (a minute or two; kept for the next comparison)`);
  try {
    await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`--compare: npm ci failed in ${dir}:\n${stderr.slice(-2000)}`, { cause: error });
  }
  if (!(await exists(bin))) throw new Error(`--compare: ${ref} built, but ${bin} is missing`);
  await writeFile(join(dir, MARKER), `${new Date().toISOString()}\n`);
  return build;
}
