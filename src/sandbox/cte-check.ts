import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parseInstant } from './event-time.js';
import type { CteExpect } from './seed-schema.js';

/**
 * The CT-e rule of api-contract.md §4.2, in two steps:
 *   readCte(xml)             the document is a CT-e and the listed elements are present, non-empty
 *                            and well-formed (a check of the body, before the delivery is looked up)
 *   matchCte(fields, expect) the values equal what the delivery expects (its seed `cte_expect`)
 * Roots: CTe, cteProc (→ CTe), CTeOS, cteOSProc (→ CTeOS); namespace prefixes are ignored.
 * A DOCTYPE is refused outright: no entity expansion from untrusted XML.
 */

export interface CteFields {
  cUF: string;
  nCT: string;
  dhEmi: string;
  emitCnpj: string;
  vTPrest: string;
  destDocument: string;
}

export type CteProblem = { field: string; message: string };
export type CteReading = { fields: CteFields } | { problem: CteProblem };

const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  parseTagValue: false,
  parseAttributeValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  trimValues: true,
});

const CNPJ = /^[0-9A-Z]{12}\d{2}$/; // alphanumeric CNPJ (from 2026) included
const FORMATS: Readonly<Record<string, RegExp | ((value: string) => boolean)>> = {
  'ide.cUF': /^\d{2}$/,
  'ide.nCT': /^\d{1,9}$/,
  'ide.dhEmi': (value) => parseInstant(value) !== null,
  'emit.CNPJ': CNPJ,
  'vPrest.vTPrest': /^\d+(\.\d+)?$/,
  'dest.CNPJ': CNPJ,
  'dest.CPF': /^\d{11}$/,
};

export function readCte(xml: string): CteReading {
  const documentProblem = (message: string): CteReading => ({ problem: { field: 'xml_cte_string', message } });
  if (/<!DOCTYPE/i.test(xml)) return documentProblem('a DOCTYPE is not allowed in a CT-e');
  const validity = XMLValidator.validate(xml);
  if (validity !== true) return documentProblem(`not well-formed XML: ${validity.err.msg} (line ${validity.err.line})`);
  const parsed: unknown = parser.parse(xml);
  const root = child(child(parsed, 'cteProc'), 'CTe') ?? child(parsed, 'CTe') ?? child(child(parsed, 'cteOSProc'), 'CTeOS') ?? child(parsed, 'CTeOS');
  if (root === undefined) return documentProblem('the root element must be CTe, cteProc, CTeOS or cteOSProc');
  const infCte = child(root, 'infCte');
  if (infCte === undefined || typeof infCte !== 'object' || infCte === null || Object.keys(infCte).length === 0) {
    return { problem: { field: 'infCte', message: 'infCte is missing or empty' } };
  }
  const values: Record<string, string> = {};
  for (const field of ['ide.cUF', 'ide.nCT', 'ide.dhEmi', 'emit.CNPJ', 'vPrest.vTPrest']) {
    const read = readField(infCte, field);
    if ('problem' in read) return read;
    values[field] = read.value;
  }
  const destField = textOf(child(child(infCte, 'dest'), 'CNPJ')) !== '' ? 'dest.CNPJ' : 'dest.CPF';
  const dest = readField(infCte, destField);
  if ('problem' in dest) {
    const isMissing = dest.problem.message.endsWith('missing or empty');
    return isMissing ? { problem: { field: 'dest.CNPJ|dest.CPF', message: 'dest.CNPJ or dest.CPF is required' } } : dest;
  }
  return {
    fields: {
      cUF: values['ide.cUF'] ?? '',
      nCT: values['ide.nCT'] ?? '',
      dhEmi: values['ide.dhEmi'] ?? '',
      emitCnpj: values['emit.CNPJ'] ?? '',
      vTPrest: values['vPrest.vTPrest'] ?? '',
      destDocument: dest.value,
    },
  };
}

/** The first field whose value differs from the delivery's expected value, or null. */
export function matchCte(fields: CteFields, expect: CteExpect | null): CteProblem | null {
  if (expect === null) return null;
  const checks: Array<[string, string, string | number | undefined, (value: string) => string]> = [
    ['ide.cUF', fields.cUF, expect.cUF, withoutLeadingZeros],
    ['ide.nCT', fields.nCT, expect.nCT, withoutLeadingZeros],
    ['emit.CNPJ', fields.emitCnpj, expect.emit_cnpj, documentDigits],
    ['vPrest.vTPrest', fields.vTPrest, expect.v_t_prest, decimal],
    ['dest.CNPJ|dest.CPF', fields.destDocument, expect.dest_document, documentDigits],
  ];
  for (const [field, actual, expected, normalise] of checks) {
    if (expected === undefined) continue;
    if (normalise(actual) !== normalise(String(expected))) {
      return { field, message: `${field} is ${actual}, but the delivery expects ${String(expected)}` };
    }
  }
  return null;
}

function readField(infCte: unknown, field: string): { value: string } | { problem: CteProblem } {
  const [parent = '', name = ''] = field.split('.');
  const node = child(child(infCte, parent), name);
  if (Array.isArray(node)) return { problem: { field, message: `${field} appears more than once` } };
  const value = textOf(node);
  if (value === '') return { problem: { field, message: `${field} is missing or empty` } };
  const format = FORMATS[field];
  const isWellFormed = format === undefined || (typeof format === 'function' ? format(value) : format.test(value));
  return isWellFormed ? { value } : { problem: { field, message: `${field} is malformed: ${value}` } };
}

function child(node: unknown, name: string): unknown {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
  return (node as Record<string, unknown>)[name];
}

function textOf(node: unknown): string {
  if (typeof node === 'string') return node.trim();
  if (typeof node === 'number') return String(node);
  const text = child(node, '#text');
  return typeof text === 'string' || typeof text === 'number' ? String(text).trim() : '';
}

function withoutLeadingZeros(value: string): string {
  return value.trim().replace(/^0+(?=\d)/, '');
}

function documentDigits(value: string): string {
  return value
    .trim()
    .replace(/[.\-/\s]/g, '')
    .toUpperCase();
}

function decimal(value: string): string {
  const [whole = '', fraction = ''] = value.trim().split('.');
  const trimmedFraction = fraction.replace(/0+$/, '');
  const trimmedWhole = whole.replace(/^0+(?=\d)/, '');
  return trimmedFraction === '' ? trimmedWhole : `${trimmedWhole}.${trimmedFraction}`;
}
