/**
 * Inputs built in code: label PDFs written byte by byte (fast, and still parsed by pdf-lib), CT-e
 * XMLs with valid tax-id check digits, NDJSON events files, and spool drops that appear at once
 * (written under a staging folder on the same filesystem, then renamed into the inbox).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { accessKeyDigit } from '../../../src/validate/tax-id.js';
import { cnpj, cpf } from '../../support/builders.js';

/** A one-page PDF of about `targetBytes` (at least ~700), with a correct xref table. */
export function labelPdf(text: string, targetBytes = 2048): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < Math.max(0, targetBytes - 700); i += 1) {
    const line = `BT /F1 9 Tf 18 ${420 - (i % 40) * 10} Td (${text} line ${i} ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789) Tj ET\n`;
    lines.push(line);
    size += line.length;
  }
  const content = `BT /F1 14 Tf 18 400 Td (${text}) Tj ET\n${lines.join('')}`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 432] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}endstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${index + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/** Valid CNPJ and CPF numbers: the tests' builders (check digits by mod 11). */
export { cnpj, cpf };

export interface CteOptions {
  nCT?: number;
  emitCnpj?: string;
  /** false: no <dest> (refused locally: CTE_FIELD_MISSING). */
  hasDest?: boolean;
  /** Items of <infCarga>, to make larger documents. */
  cargoItems?: number;
  doctype?: boolean;
}

export function cteXml(options: CteOptions = {}): string {
  const nCT = options.nCT ?? 123;
  const emit = options.emitCnpj ?? cnpj('112223330001');
  const dest =
    options.hasDest === false ? '' : `<dest><CPF>${cpf(String(100000000 + (nCT % 899999999)).slice(0, 9))}</CPF><xNome>Destinatario ${nCT}</xNome></dest>`;
  const cargo = Array.from(
    { length: options.cargoItems ?? 2 },
    (_, i) => `<infQ><cUnid>01</cUnid><tpMed>PESO BRUTO</tpMed><qCarga>${(i + 1) * 1.5}</qCarga></infQ>`,
  ).join('');
  const doctype = options.doctype === true ? '<!DOCTYPE CTe [<!ENTITY x "y">]>\n' : '';
  // cUF, AAMM, CNPJ, mod, serie, nCT, tpEmis, cCT, then the check digit: no warning in the log.
  const first43 = `352603${emit}57001${String(nCT).padStart(9, '0')}1${String(nCT % 1e8).padStart(8, '0')}`;
  const accessKey = `${first43}${accessKeyDigit(first43)}`;
  return `<?xml version="1.0" encoding="UTF-8"?>
${doctype}<CTe xmlns="http://www.portalfiscal.inf.br/cte"><infCte versao="4.00" Id="CTe${accessKey}">
<ide><cUF>35</cUF><mod>57</mod><serie>1</serie><nCT>${nCT}</nCT><dhEmi>2026-03-01T10:00:00-03:00</dhEmi></ide>
<emit><CNPJ>${emit}</CNPJ><xNome>Transportes Bench</xNome></emit>
<vPrest><vTPrest>150.00</vTPrest><vRec>150.00</vRec></vPrest>
${dest}<infCTeNorm><infCarga><vCarga>1000.00</vCarga><proPred>Caixas</proPred>${cargo}</infCarga></infCTeNorm>
</infCte></CTe>`;
}

export interface EventLine {
  delivery_id: string;
  event_at: string;
}

export function ndjson(rows: readonly EventLine[]): string {
  return rows.map((row) => JSON.stringify(row)).join('\n') + '\n';
}

/** Distinct past instants, spaced by seconds from a fixed day (never in the future: no delay). */
export function pastInstant(index: number): Date {
  return new Date(Date.UTC(2026, 0, 10, 8, 0, 0) + index * 1000 + (index % 7) * 13);
}

/** The same instant written another way: another offset and/or another precision. */
export function sameInstantOtherwise(at: Date, variant: number): string {
  const shifted = (offsetMinutes: number): string => {
    const local = new Date(at.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 23);
    const sign = offsetMinutes < 0 ? '-' : '+';
    const abs = Math.abs(offsetMinutes);
    return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  };
  switch (variant % 5) {
    case 0:
      return shifted(-180);
    case 1:
      return `${at.toISOString().slice(0, 23)}000000+00:00`;
    case 2:
      return shifted(330);
    case 3:
      return shifted(-60).replace(/:(\d{2})$/, '$1');
    default:
      return `${at.toISOString().slice(0, 19)}.${at.toISOString().slice(20, 23)}0Z`;
  }
}

/** A deterministic shuffle (mulberry32), so every run writes the same file shape. */
export function shuffle<T>(items: T[], seed: number): T[] {
  let a = seed;
  const random = (): number => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** Writes files under `<staging>/<token>/` so a later `dropAll` can rename them into place at once. */
export async function stageFiles(staging: string, files: ReadonlyArray<{ name: string; bytes: Buffer | string }>): Promise<string> {
  const dir = join(staging, randomUUID());
  await mkdir(dir, { recursive: true });
  const CHUNK = 256;
  for (let i = 0; i < files.length; i += CHUNK) {
    await Promise.all(files.slice(i, i + CHUNK).map((file) => writeFile(join(dir, file.name), file.bytes)));
  }
  return dir;
}

/** Renames staged files into `inbox` (one rename each: the files appear whole). */
export async function dropAll(stagedDir: string, inbox: string, names: readonly string[]): Promise<void> {
  const CHUNK = 256;
  for (let i = 0; i < names.length; i += CHUNK) {
    await Promise.all(names.slice(i, i + CHUNK).map((name) => rename(join(stagedDir, name), join(inbox, name))));
  }
}
