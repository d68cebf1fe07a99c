import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { SyncError, type ErrorCode } from '../errors.js';
import { parseEventAt } from './event-at.js';
import { cteLookAlike, cteLookAlikeReason } from './look-alike.js';
import { accessKeyDigit, cnpjProblem, cpfProblem, isAllZeros } from './tax-id.js';
import { accept, reject, type Verdict } from './verdict.js';
import { decodeXml } from './xml-encoding.js';
import { asNode, child, childAt, hasTextDeep, text, type XmlNode } from './xml-tree.js';

/**
 * CT-e check for PUT /v1/delivery/cte (contract 4.2): the document must carry infCte with ide/cUF,
 * ide/nCT, ide/dhEmi, emit/CNPJ, vPrest/vTPrest and dest/CNPJ|CPF, filled in and well-formed.
 * Decisions:
 * - DOCTYPE/ENTITY anywhere is refused before parsing (no entity expansion, no XXE): a CT-e never needs one.
 * - CT-e OS (modelo 67, roots CTeOS/cteOSProc) has no dest element (it has toma), but the API requires
 *   dest: refused with CTE_FIELD_MISSING and a message that says a CT-e OS cannot be sent.
 * - A cteProc carrying a cancellation (procCancCTe, a cancellation event 110111, or protocol cStat 101)
 *   is refused with CTE_CANCELLED: a cancelled CT-e cannot document a delivery.
 * - dhEmi without a UTC offset (layout 2.00 wrote local time) is refused: we never guess a timezone.
 * - An all-zero CNPJ passes mod 11: accepted with a warning.
 * - The access key (infCte@Id) is not checked by the API: a mismatch with ide or a bad key check
 *   digit is a warning only.
 */

export interface CteSummary {
  /** The decoded text, BOM stripped, its declaration saying UTF-8: what is sent as xml_cte_string. */
  xml: string;
  /** The encoding its declaration named when that was not UTF-8 (the declaration sent says UTF-8); null otherwise. */
  declaredEncoding: string | null;
  root: string;
  model: '57' | '67' | null;
  version: string;
  cUF: string;
  nCT: string;
  dhEmi: string;
  emitCnpj: string;
  vTPrest: string;
  destDocument: { type: 'CNPJ' | 'CPF'; value: string };
  accessKey: string | null;
}

interface Problem {
  code: ErrorCode;
  text: string;
}

/** Accepted roots → the element that holds infCte. */
const DOCUMENT_OF: ReadonlyMap<string, string> = new Map([
  ['CTe', 'CTe'],
  ['cteProc', 'CTe'],
  ['CTeOS', 'CTeOS'],
  ['cteOSProc', 'CTeOS'],
]);
const STATE_CODES = new Set([11, 12, 13, 14, 15, 16, 17, 21, 22, 23, 24, 25, 26, 27, 28, 29, 31, 32, 33, 35, 41, 42, 43, 50, 51, 52, 53]);
const DH_EMI = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})?$/;
const DECIMAL = /^\d{1,13}(\.\d{1,2})?$/;
const ACCESS_KEY = /^CTe(\d{2})\d{4}([0-9A-Z]{14})(\d{2})\d{3}(\d{9})\d{9}(\d)$/;
const CTE_NAMESPACE = 'http://www.portalfiscal.inf.br/cte';

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // No callbacks here take a path: without this the parser spells out every element's path as a
  // string (a seventh of a CT-e check; ingest bench, BENCHMARKS.md item 6).
  jPath: false,
});

export function checkCte(bytes: Uint8Array, options: { maxBytes: number }): Verdict<CteSummary> {
  if (bytes.length > options.maxBytes) {
    return fail('CTE_TOO_LARGE', `the CT-e is ${bytes.length} bytes, over the limit of ${options.maxBytes}`);
  }
  if (bytes.length === 0) return fail('CTE_NOT_XML', 'the CT-e file is empty; write the XML completely before moving it into the inbox');
  const decoded = decodeXml(bytes);
  if (decoded instanceof SyncError) return reject(decoded);
  const xml = decoded.text;
  if (/<!(DOCTYPE|ENTITY)/i.test(xml)) {
    return fail('CTE_DOCTYPE', 'the XML holds a <!DOCTYPE> or <!ENTITY> declaration, which a CT-e never has and we never expand; remove it');
  }
  const wellFormed = XMLValidator.validate(xml);
  if (wellFormed !== true) {
    const { msg, line, col } = wellFormed.err;
    return fail('CTE_NOT_XML', `the file is not well-formed XML: ${msg} (line ${line}${col === undefined ? '' : `, column ${col}`}); fix or re-export it`);
  }
  let tree: XmlNode;
  try {
    tree = parser.parse(xml) as XmlNode;
  } catch (error) {
    return fail('CTE_NOT_XML', `the XML cannot be read (${error instanceof Error ? error.message : String(error)})`);
  }
  const root = Object.keys(tree).find((key) => !key.startsWith('?')) ?? '';
  const verdict = checkDocument(xml, root, tree[root]);
  return verdict.ok ? accept({ ...verdict.value, declaredEncoding: decoded.declared }, verdict.warnings) : verdict;
}

function checkDocument(xml: string, root: string, rootNode: unknown): Verdict<Omit<CteSummary, 'declaredEncoding'>> {
  const documentName = DOCUMENT_OF.get(root);
  if (documentName === undefined) {
    const lookAlike = cteLookAlike(root);
    return fail('CTE_NOT_CTE', cteLookAlikeReason(lookAlike, root), { lookAlike, root });
  }
  const document = root === documentName ? rootNode : child(rootNode, documentName);
  if (document === undefined) return fail('CTE_NOT_CTE', `<${root}> holds no <${documentName}>; send the processed CT-e as issued`);
  const infCte = child(document, 'infCte');
  if (infCte === undefined) return fail('CTE_FIELD_MISSING', `infCte is missing from <${documentName}>; the API requires the CT-e's infCte`);
  const cancelled = cancellation(root, rootNode);
  if (cancelled !== null) return fail('CTE_CANCELLED', `${cancelled}: a cancelled CT-e cannot document a delivery; send the CT-e that replaced it`);
  const mod = text(childAt(infCte, 'ide/mod'));
  if (child(infCte, 'dest') === undefined && (documentName === 'CTeOS' || mod === '67')) {
    return fail(
      'CTE_FIELD_MISSING',
      'infCte/dest is missing: this is a CT-e OS (modelo 67), which has no dest (only toma), and the API requires dest/CNPJ or dest/CPF; a CT-e OS cannot be sent',
    );
  }
  const problems: Problem[] = [];
  const field = (path: string, rule: (value: string) => string | null): string => {
    const value = text(childAt(infCte, path));
    if (value === undefined || value === '') problems.push({ code: 'CTE_FIELD_MISSING', text: `infCte/${path} is missing or empty` });
    else {
      const problem = rule(value);
      if (problem !== null) problems.push({ code: 'CTE_FIELD_INVALID', text: `infCte/${path} ${JSON.stringify(shorten(value))} ${problem}` });
    }
    return value ?? '';
  };
  const cUF = field('ide/cUF', (v) =>
    /^\d{2}$/.test(v) && STATE_CODES.has(Number(v)) ? null : 'is not an IBGE state code (11–17, 21–29, 31–33, 35, 41–43, 50–53)',
  );
  const nCT = field('ide/nCT', (v) => (/^\d{1,9}$/.test(v) && !isAllZeros(v) ? null : 'must be 1–9 digits, not all zero'));
  const dhEmi = field('ide/dhEmi', dhEmiProblem);
  const emitCnpj = field('emit/CNPJ', cnpjProblem);
  const vTPrest = field('vPrest/vTPrest', (v) => (DECIMAL.test(v) ? null : 'must be a decimal such as 1234.56 (up to 13 digits, a dot, up to 2 decimals)'));
  const destDocument = destOf(child(infCte, 'dest'), problems, field);
  if (problems.length > 0) {
    const message = `${problems.map((p) => p.text).join('; ')}; the API validates these fields: correct them and re-issue the CT-e`;
    return fail(problems[0]?.code ?? 'CTE_FIELD_INVALID', message, { problems: problems.map((p) => p.text) });
  }
  const warnings: string[] = [];
  for (const [name, value] of [
    ['emit/CNPJ', emitCnpj],
    [`dest/${destDocument.type}`, destDocument.value],
  ]) {
    if (value !== undefined && isAllZeros(value)) warnings.push(`infCte/${name} is all zeros: it passes the check digits but is no real company`);
  }
  const model = mod === '57' || mod === '67' ? mod : null;
  if (model === null) warnings.push(`infCte/ide/mod is ${JSON.stringify(mod ?? '')}, not 57 (CT-e) or 67 (CT-e OS)`);
  const protocolStatus = text(childAt(rootNode, 'protCTe/infProt/cStat'));
  if (protocolStatus !== undefined && protocolStatus !== '100' && protocolStatus !== '150') {
    warnings.push(`the protocol's cStat is ${protocolStatus}, not an authorization (100 or 150)`);
  }
  if (!xml.includes(CTE_NAMESPACE)) warnings.push(`the XML does not use the CT-e namespace ${CTE_NAMESPACE}`);
  const accessKey = checkAccessKey(text(child(infCte, '@_Id')), { cUF, nCT, mod: mod ?? '', emitCnpj }, warnings);
  const version = text(child(infCte, '@_versao')) ?? text(child(document, '@_versao')) ?? '';
  return accept({ xml, root, model, version, cUF, nCT, dhEmi, emitCnpj, vTPrest, destDocument, accessKey }, warnings);
}

/** dest holds exactly one of CNPJ and CPF (an XSD choice). */
function destOf(dest: unknown, problems: Problem[], field: (path: string, rule: (value: string) => string | null) => string): CteSummary['destDocument'] {
  const hasCnpj = text(child(dest, 'CNPJ')) !== undefined;
  const hasCpf = text(child(dest, 'CPF')) !== undefined;
  if (hasCnpj && hasCpf) problems.push({ code: 'CTE_FIELD_INVALID', text: 'infCte/dest holds both CNPJ and CPF; it must hold exactly one' });
  if (!hasCnpj && !hasCpf) {
    problems.push({ code: 'CTE_FIELD_MISSING', text: 'infCte/dest/CNPJ (or dest/CPF) is missing; the API requires the recipient tax id' });
    return { type: 'CNPJ', value: '' };
  }
  return hasCnpj ? { type: 'CNPJ', value: field('dest/CNPJ', cnpjProblem) } : { type: 'CPF', value: field('dest/CPF', cpfProblem) };
}

function dhEmiProblem(value: string): string | null {
  const shape = DH_EMI.exec(value);
  if (shape === null) return 'must be a date-time with offset, YYYY-MM-DDThh:mm:ss±hh:mm';
  if (shape[1] === undefined) return 'has no UTC offset; the API needs one such as -03:00 (layout 2.00 wrote local time) and we never guess a timezone';
  return parseEventAt(value) instanceof SyncError ? 'is not a real calendar date and time' : null;
}

/** A cancellation travels with the processed CT-e, outside the signed CTe element. */
function cancellation(root: string, rootNode: unknown): string | null {
  if (root !== 'cteProc' && root !== 'cteOSProc') return null;
  if (child(rootNode, 'procCancCTe') !== undefined) return `the ${root} carries procCancCTe (a cancellation)`;
  if (text(childAt(rootNode, 'protCTe/infProt/cStat')) === '101') return `the ${root} protocol has cStat 101 (cancelled)`;
  const others = Object.entries(asNode(rootNode) ?? {}).filter(([key]) => key !== 'CTe' && key !== 'CTeOS');
  if (others.some(([, value]) => hasTextDeep(value, 'tpEvento', '110111'))) return `the ${root} carries a cancellation event (tpEvento 110111)`;
  return null;
}

function checkAccessKey(id: string | undefined, ide: { cUF: string; nCT: string; mod: string; emitCnpj: string }, warnings: string[]): string | null {
  if (id === undefined) {
    warnings.push('infCte has no Id attribute (the access key)');
    return null;
  }
  const key = ACCESS_KEY.exec(id);
  if (key === null) {
    warnings.push(`infCte@Id ${JSON.stringify(shorten(id))} is not "CTe" followed by a 44-character access key`);
    return null;
  }
  const [, keyUF, keyCnpj, keyMod, keyNumber, keyDigit] = key;
  if (keyUF !== ide.cUF) warnings.push(`the access key's cUF ${keyUF ?? ''} differs from infCte/ide/cUF ${ide.cUF}`);
  if (keyMod !== ide.mod) warnings.push(`the access key's model ${keyMod ?? ''} differs from infCte/ide/mod ${ide.mod}`);
  if (keyNumber !== ide.nCT.padStart(9, '0')) warnings.push(`the access key's nCT ${keyNumber ?? ''} differs from infCte/ide/nCT ${ide.nCT}`);
  if (keyCnpj !== ide.emitCnpj) warnings.push(`the access key's CNPJ ${keyCnpj ?? ''} differs from infCte/emit/CNPJ ${ide.emitCnpj}`);
  const digits = id.slice(3);
  if (String(accessKeyDigit(digits.slice(0, 43))) !== keyDigit) warnings.push(`the access key's check digit ${keyDigit ?? ''} is wrong`);
  return digits;
}

function shorten(value: string): string {
  return value.length > 60 ? `${value.slice(0, 60)}…` : value;
}

function fail<T = CteSummary>(code: ErrorCode, message: string, params?: Record<string, unknown>): Verdict<T> {
  return reject(new SyncError(code, message, params === undefined ? {} : { params }));
}
