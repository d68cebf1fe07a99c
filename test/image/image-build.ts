/**
 * The image under test: its base (the official node:20-bookworm-slim, pulled, or the stand-in of
 * deploy/image/stand-in-base.sh where no registry answers), its build, and the run flags this
 * machine needs.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { must, type Engine } from './engine.js';

export const IMAGE = process.env['CARRIER_SYNC_IMAGE'] ?? 'localhost/carrier-sync:test-image';
export const BASE = 'docker.io/library/node:20-bookworm-slim';

export async function prepareBase(engine: Engine, root: string): Promise<void> {
  if ((await engine.run(['image', 'inspect', BASE])).code === 0) return;
  if ((await engine.run(['pull', BASE], 300_000)).code === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`${BASE} is not here and cannot be pulled: run deploy/image/stand-in-base.sh ${engine.name} as root`);
  process.stderr.write(`${BASE} cannot be pulled: making the stand-in (deploy/image/stand-in-base.sh)\n`);
  await promisify(execFile)('bash', [join(root, 'deploy/image/stand-in-base.sh'), engine.name], { timeout: 1_200_000, maxBuffer: 16 * 1024 * 1024 });
}

/** Builds IMAGE from the repository's Dockerfile; returns how long it took. */
export async function buildImage(engine: Engine, root: string): Promise<number> {
  const args = ['build', '-t', IMAGE, '-f', join(root, 'Dockerfile')];
  // podman's default OCI format drops HEALTHCHECK; --pull=never keeps a stand-in base from being replaced.
  if (engine.name === 'podman') args.push('--format', 'docker', '--pull=never');
  // A TLS-intercepting proxy between here and the npm registry: hand its CA to npm for the build only.
  const ca = process.env['NODE_EXTRA_CA_CERTS'];
  if (ca !== undefined && existsSync(ca)) args.push('--secret', `id=npm-ca,src=${ca}`);
  const startedAt = Date.now();
  await must(engine, [...args, root], 1_500_000);
  return Date.now() - startedAt;
}

/**
 * Extra `run` flags. Some sandboxes refuse the rlimits podman asks runc for by default (nofile and
 * nproc at their maximum): then the image runs with modest ones, which the daemon is well within.
 */
export async function runArgsFor(engine: Engine): Promise<string[]> {
  const own = process.env['CARRIER_SYNC_IMAGE_RUN_ARGS'];
  if (own !== undefined) return own.split(' ').filter(Boolean);
  const plain = await engine.run(['run', '--rm', IMAGE, '--version']);
  if (plain.code === 0) return [];
  const modest = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
  if (/rlimit/i.test(plain.stderr) && (await engine.run(['run', '--rm', ...modest, IMAGE, '--version'])).code === 0) return modest;
  throw new Error(`${engine.name} run ${IMAGE} --version failed:\n${plain.stderr}`);
}
