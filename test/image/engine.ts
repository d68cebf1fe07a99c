/**
 * The container engine for `npm run test:image`: podman (preferred) or docker, found on PATH, or
 * the one `CONTAINER_ENGINE` names. Commands run with execFile (no shell) and never throw: the
 * tests read the exit code.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface Engine {
  name: 'podman' | 'docker';
  run(args: readonly string[], timeoutMs?: number): Promise<EngineResult>;
}

export interface EngineResult {
  code: number;
  stdout: string;
  stderr: string;
}

const onPath = (command: string): boolean => (process.env['PATH'] ?? '').split(':').some((folder) => folder !== '' && existsSync(join(folder, command)));

export async function findEngine(): Promise<Engine> {
  const wanted = process.env['CONTAINER_ENGINE'];
  const candidates: ReadonlyArray<'podman' | 'docker'> = wanted === 'podman' || wanted === 'docker' ? [wanted] : ['podman', 'docker'];
  for (const name of candidates) {
    if (!onPath(name)) continue;
    const engine = engineOf(name);
    if ((await engine.run(['info'], 60_000)).code === 0) return engine;
  }
  throw new Error('npm run test:image needs podman or docker (a working one: `podman info` / `docker info`)');
}

function engineOf(name: 'podman' | 'docker'): Engine {
  return {
    name,
    run: (args, timeoutMs = 120_000) =>
      new Promise((resolve) => {
        execFile(name, [...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
          resolve({ code, stdout, stderr });
        });
      }),
  };
}

/** Throws with the command's output unless it exited 0; returns its stdout. */
export async function must(engine: Engine, args: readonly string[], timeoutMs?: number): Promise<string> {
  const result = await engine.run(args, timeoutMs);
  if (result.code !== 0) throw new Error(`${engine.name} ${args.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}`);
  return result.stdout;
}
