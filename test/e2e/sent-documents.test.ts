/**
 * What is SENT for documents as warehouses really make them (issue 30), through the built binary
 * against the sandbox over HTTP: a browser-printed label padded with 20,480 NULs after %%EOF
 * reaches the API ending in %%EOF while archive/ keeps the file as dropped and its journey says
 * what was cut; CT-e saved as ISO-8859-1 and as UTF-16 reach the API with a UTF-8 declaration and
 * their accented names intact; look-alike files are refused with a reason naming what they are.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JourneyStep } from '../../src/journey/journey-read.js';
import { zipWith } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const REAL = new URL('../fixtures/real/', import.meta.url);
const real = (path: string): Promise<Buffer> => readFile(new URL(path, REAL));
const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

let env: E2eEnv;
let daemon: DaemonProcess;
const ids = { padded: '', latin1: '', utf16be: '', signedUtf16le: '' };
let padded: Buffer = Buffer.alloc(0);

/** Look-alikes dropped into the inboxes, and what their refusal must say. */
const LABEL_LOOK_ALIKES: Array<{ name: string; bytes: () => Promise<Buffer>; reason: RegExp }> = [
  { name: 'ZPL-LABEL.pdf', bytes: () => real('pdf/zpl-usps-shipping-label-4x6-named-pdf.pdf'), reason: /ZPL thermal-printer label .*export the label as PDF/ },
  { name: 'EPL-LABEL.pdf', bytes: async () => Buffer.from('\nN\nq812\nA50,50,0,4,1,1,N,"ACME"\nP1\n'), reason: /EPL thermal-printer label/ },
  { name: 'PNG-LABEL.pdf', bytes: () => real('pdf/png-image-named-pdf.pdf'), reason: /PNG image, not a PDF/ },
  { name: 'JPEG-LABEL.pdf', bytes: async () => Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46]), reason: /JPEG image/ },
  { name: 'TIFF-LABEL.pdf', bytes: async () => Buffer.from([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0]), reason: /TIFF image/ },
  { name: 'ZIP-LABEL.pdf', bytes: async () => zipWith('label.pdf'), reason: /ZIP archive, not a PDF: unpack it/ },
  { name: 'DOCX-LABEL.pdf', bytes: async () => zipWith('[Content_Types].xml'), reason: /Office document \(Word, Excel or PowerPoint\)/ },
  { name: 'DOC-LABEL.pdf', bytes: async () => Buffer.concat([Buffer.from('d0cf11e0a1b11ae1', 'hex'), Buffer.alloc(504)]), reason: /older Office document/ },
  { name: 'HTML-LABEL.pdf', bytes: async () => Buffer.from('<!DOCTYPE html>\n<html><body>Etiqueta</body></html>\n'), reason: /HTML web page, not a PDF/ },
];
const CTE_LOOK_ALIKES: Array<{ name: string; file: string; reason: RegExp }> = [
  { name: 'NFE.xml', file: 'cte/not-cte-nfeproc-v4.00-nfe-mod55.xml', reason: /<nfeProc> is an NF-e/ },
  { name: 'MDFE.xml', file: 'cte/not-cte-mdfeproc-v3.00-mdfe.xml', reason: /<mdfeProc> is an MDF-e/ },
  { name: 'NFE-EVENT.xml', file: 'cte/not-cte-proceventonfe-cce.xml', reason: /<procEventoNFe> is an NF-e event/ },
  { name: 'CTE-EVENT.xml', file: 'cte/not-cte-proceventocte-v3.00-cce.xml', reason: /<procEventoCTe> is a CT-e event/ },
];

beforeAll(async () => {
  env = await createE2eEnv();
  daemon = spawnDaemon(env.env, { args: env.args('start') });
  await waitUntilStarted(daemon);
  ids.padded = env.sandbox.state.addDelivery().id;
  ids.latin1 = env.sandbox.state.addDelivery().id;
  ids.utf16be = env.sandbox.state.addDelivery().id;
  ids.signedUtf16le = env.sandbox.state.addDelivery().id;
  padded = await real('pdf/browser-printed-20480-nul-after-eof.pdf');
  const labels = join(env.spool, 'labels');
  const cte = join(env.spool, 'cte');
  await dropFile(labels, `${ids.padded}.pdf`, padded);
  await dropFile(cte, `${ids.latin1}.xml`, await real('cte/transcoded-cte-v4.00-modal-aereo-iso-8859-1.xml'));
  await dropFile(cte, `${ids.utf16be}.xml`, await real('cte/transcoded-cte-v4.00-modal-aereo-utf-16be-bom.xml'));
  await dropFile(cte, `${ids.signedUtf16le}.xml`, await real('cte/transcoded-cteproc-v3.00-signed-utf-16le-bom.xml'));
  for (const lookAlike of LABEL_LOOK_ALIKES) await dropFile(labels, lookAlike.name, await lookAlike.bytes());
  for (const lookAlike of CTE_LOOK_ALIKES) await dropFile(cte, lookAlike.name, await real(lookAlike.file));
  const refused = LABEL_LOOK_ALIKES.length + CTE_LOOK_ALIKES.length;
  await waitFor(
    async () =>
      (await listFiles(join(env.spool, 'archive'))).length === 4 &&
      (await listFiles(join(env.spool, 'failed'))).filter((file) => file.endsWith('.error.json')).length === refused,
    { what: `4 documents archived and ${refused} look-alikes refused`, timeoutMs: 30_000 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${daemon.tail(30)}`);
  });
}, 90_000);

afterAll(async () => {
  await killAllDaemons();
  await env?.close();
});

describe('a browser-printed label padded with NULs after %%EOF', () => {
  it('reaches the API ending in %%EOF and one LF, without the 20,480 NULs', () => {
    const received = env.sandbox.state.deliveries.get(ids.padded)?.label;
    const sent = padded.subarray(0, padded.length - 20_480);
    expect(sent.subarray(-6).toString('latin1')).toBe('%%EOF\n');
    expect(received).toMatchObject({ sha256: sha(sent), size_bytes: 14_054 });
  });

  it('is archived byte for byte as dropped', async () => {
    const [archived] = (await listFiles(join(env.spool, 'archive', 'labels'))).filter((file) => file.endsWith(`${ids.padded}.pdf`));
    expect(archived).toBeDefined();
    const bytes = await readFile(join(env.spool, 'archive', 'labels', archived ?? ''));
    expect(bytes.length).toBe(34_534);
    expect(sha(bytes)).toBe(sha(padded));
  });

  it('has a journey that says it was sent without 20480 bytes of padding after %%EOF', async () => {
    // The archived step is written after the move (journey-files.ts), within a flush.
    const steps = await waitFor(
      async () => {
        const json = await runCli(env.args('history', ids.padded, '--json'), { env: env.env, timeoutMs: 15_000 });
        expect(json.code, json.stderr).toBe(0);
        const read = json.stdout
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as JourneyStep);
        return read.some((step) => step.step === 'archived') ? read : null;
      },
      { what: 'the archived step in the journey', timeoutMs: 30_000 },
    );
    expect(steps.find((step) => step.step === 'valid')).toMatchObject({ paddingBytes: 20_480, message: 'sent without 20480 bytes of padding after %%EOF' });
    expect(steps.map((step) => step.step)).toEqual(expect.arrayContaining(['seen', 'claimed', 'valid', 'queued', 'attempt', 'accepted', 'archived']));
    expect(steps.find((step) => step.step === 'seen')).toMatchObject({ size: 34_534, sha256: sha(padded) });
    const text = await runCli(env.args('history', ids.padded), { env: env.env, timeoutMs: 15_000 });
    expect(text.stdout).toMatch(/checked: valid; sent without 20480 bytes of padding after %%EOF/);
  });
});

describe('CT-e saved in another encoding', () => {
  const cases = [
    { what: 'ISO-8859-1 (accented names)', id: () => ids.latin1, source: 'cte/cte-v4.00-bare-unsigned-modal-aereo.xml' },
    { what: 'UTF-16 BE with a BOM (accented names)', id: () => ids.utf16be, source: 'cte/cte-v4.00-bare-unsigned-modal-aereo.xml' },
    { what: 'UTF-16 LE with a BOM (a signed cteProc)', id: () => ids.signedUtf16le, source: 'cte/cteproc-v3.00-signed-dest-cnpj-authorized.xml' },
  ];
  for (const { what, id, source } of cases) {
    it(`${what} reaches the API with a UTF-8 declaration, otherwise the original byte for byte`, async () => {
      const original = (await real(source)).toString('utf8');
      const received = env.sandbox.state.deliveries.get(id())?.cte;
      expect(received?.xml.slice(0, 50)).toMatch(/^<\?xml version="1.0" encoding="UTF-8" ?\?>/);
      expect(received?.xml).toBe(original);
      expect(received?.sha256).toBe(sha(Buffer.from(original, 'utf8')));
      for (const name of original.match(/[^<>\s]*[À-ÿ][^<>\s]*/g) ?? []) expect(received?.xml).toContain(name);
    });
  }
});

describe('look-alike files', () => {
  for (const { name, reason } of [...LABEL_LOOK_ALIKES.map((l) => ({ ...l, kind: 'labels' })), ...CTE_LOOK_ALIKES.map((c) => ({ ...c, kind: 'cte' }))]) {
    it(`${name} is refused with a reason naming what it is`, async () => {
      const kind = name.endsWith('.pdf') ? 'labels' : 'cte';
      const reports = (await listFiles(join(env.spool, 'failed', kind))).filter((file) => file.endsWith(`${name}.error.json`));
      expect(reports).toHaveLength(1);
      const report = JSON.parse(await readFile(join(env.spool, 'failed', kind, reports[0] ?? ''), 'utf8')) as { code: string; message: string };
      expect(report.code).toBe(kind === 'labels' ? 'LABEL_NOT_PDF' : 'CTE_NOT_CTE');
      expect(report.message).toMatch(reason);
    });
  }
});

describe('carrier-sync validate says which case a label is', () => {
  it('padding after %%EOF: valid, sent without it; other bytes after %%EOF: LABEL_TRAILING_DATA, not all padding', async () => {
    const files = [new URL('pdf/browser-printed-20480-nul-after-eof.pdf', REAL).pathname, new URL('pdf/junk-after-eof-comment-lines.pdf', REAL).pathname];
    const result = await runCli(env.args('validate', ...files), { env: env.env, timeoutMs: 15_000 });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/valid +\S*browser-printed-20480-nul-after-eof\.pdf\n.*\n\s+note: sent without 20480 bytes of padding after %%EOF/);
    expect(result.stdout).toMatch(
      /INVALID \S*junk-after-eof-comment-lines\.pdf\n\s+LABEL_TRAILING_DATA: 83 bytes follow the last %%EOF and not all are padding/,
    );
    const cte = await runCli(env.args('validate', new URL('cte/transcoded-cte-v4.00-modal-aereo-iso-8859-1.xml', REAL).pathname), {
      env: env.env,
      timeoutMs: 15_000,
    });
    expect(cte.stdout).toMatch(/note: declared ISO-8859-1: sent as UTF-8, with its declaration saying UTF-8/);
  });
});
