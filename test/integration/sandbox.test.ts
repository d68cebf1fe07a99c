/**
 * The sandbox API over real HTTP on loopback: keys, rate limit, the five error shapes, the rules
 * of every endpoint, fault injection (in-process and through /_sandbox) and seed validation.
 * Ids below are those of config/sandbox-seed.json.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from '../../src/sandbox/rate-limit.js';
import { startSandbox, type SandboxHandle, type SandboxSeed } from '../../src/sandbox/server.js';

const uuid = (prefix: string, n: number): string => `${prefix}-0000-4000-8000-${String(n).padStart(12, '0')}`;
const C1 = uuid('ca000000', 1);
const C2 = uuid('ca000000', 2);
const G1 = uuid('5e000000', 1);
const G2 = uuid('5e000000', 2);
const delivery = (n: number): string => uuid('de000000', n);
const order = (n: number): string => uuid('aa000000', n);
const D = {
  c1Cancelled: delivery(1),
  c2Pending: delivery(2),
  c2Failed: delivery(3),
  c1PendingCte: delivery(4),
  c1Failed: delivery(5),
  c1DispatchedCte: delivery(8),
  c1InTransit: delivery(9),
};
const WEBHOOK_C1 = uuid('fb000000', 1);
const WEBHOOK_C2 = uuid('fb000000', 2);
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Who = 'c1' | 'c2' | 'g1' | 'g2' | 'nobody';
interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

function client(sandbox: () => SandboxHandle) {
  return async (method: string, path: string, options: { as?: Who; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> => {
    const { keys, url } = sandbox();
    const headers: Record<string, string> = { ...options.headers };
    if (options.as === 'c1' || options.as === 'c2') headers['x-service-carrier-key'] = keys.carriers[options.as === 'c1' ? C1 : C2] ?? '';
    if (options.as === 'g1' || options.as === 'g2') headers['x-service-seller-group-key'] = keys.sellerGroups[options.as === 'g1' ? G1 : G2] ?? '';
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) };
  };
}

const pdf = (text = '%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF'): string => Buffer.from(text, 'latin1').toString('base64');

interface CteValues {
  cUF: string;
  nCT: string;
  dhEmi: string;
  CNPJ: string;
  vTPrest: string;
  dest: string;
}
const CTE_04: CteValues = {
  cUF: '35',
  nCT: '1004',
  dhEmi: '2025-03-02T10:00:00-03:00',
  CNPJ: '12345678000195',
  vTPrest: '18.00',
  dest: '<CPF>00000000002</CPF>',
};
function cteXml(values: Partial<CteValues> = {}, root: 'cteProc' | 'CTe' | 'CTeOS' = 'cteProc'): string {
  const v = { ...CTE_04, ...values };
  const tag = (name: string, value: string): string => (value === '' ? '' : `<${name}>${value}</${name}>`);
  const inf = `<infCte Id="CTe35250312345678000195570010000010041000010040" versao="4.00"><ide>${tag('cUF', v.cUF)}${tag('nCT', v.nCT)}${tag('dhEmi', v.dhEmi)}</ide><emit>${tag('CNPJ', v.CNPJ)}</emit><vPrest>${tag('vTPrest', v.vTPrest)}</vPrest>${v.dest === '' ? '' : `<dest>${v.dest}</dest>`}</infCte>`;
  const ns = 'xmlns="http://www.portalfiscal.inf.br/cte"';
  if (root === 'CTeOS') return `<?xml version="1.0" encoding="UTF-8"?><CTeOS ${ns} versao="4.00">${inf}</CTeOS>`;
  if (root === 'CTe')
    return `<?xml version="1.0"?><cte:CTe xmlns:cte="http://www.portalfiscal.inf.br/cte">${inf.replace(/<(\/?)(\w+)/g, '<$1cte:$2')}</cte:CTe>`;
  return `<?xml version="1.0" encoding="UTF-8"?><cteProc ${ns} versao="4.00"><CTe ${ns}>${inf}</CTe><protCTe versao="4.00"/></cteProc>`;
}

let sb: SandboxHandle;
const api = client(() => sb);
beforeAll(async () => {
  sb = await startSandbox({ ratePerMinute: 100_000 });
});
afterAll(async () => {
  await sb.close();
  await sb.close(); // idempotent
});
afterEach(() => {
  sb.setFaults({ errorRate: 0, resetRate: 0, latencyMs: 0, latencyJitterMs: 0, rateLimitStormUntil: null, unauthorizedUntil: null, stormRetryAfterSec: 1 });
});

const EVERY_ENDPOINT: Array<[string, string, Who, Who]> = [
  ['POST', '/v1/delivery/collecting', 'c1', 'g1'],
  ['PUT', '/v1/delivery/cte', 'c1', 'g1'],
  ['POST', '/v1/delivery/mail-label', 'c1', 'g1'],
  ['PATCH', `/v1/carrier/webhook/${WEBHOOK_C1}`, 'c1', 'g1'],
  ['GET', '/seller-group/v1/seller/identifier/11222333000181/orders/external_id/shop-order-1/events', 'g1', 'c1'],
  ['GET', `/seller-group/v1/orders/${order(1)}`, 'g1', 'c1'],
  ['PUT', `/seller-group/v1/orders/${order(1)}`, 'g1', 'c1'],
  ['POST', '/v1/quotation/orders', 'g1', 'c1'],
];

describe('keys', () => {
  it.each(EVERY_ENDPOINT)('%s %s answers 401 shape E without a key, with a wrong key and with the other kind of key', async (method, path, _own, other) => {
    const body = method === 'GET' ? undefined : {};
    const attempts: Array<Record<string, string>> = [{}, { 'x-service-carrier-key': 'wrong', 'x-service-seller-group-key': 'wrong' }];
    for (const headers of attempts) {
      const answer = await api(method, path, { body, headers });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ message: 'Unauthorized' });
    }
    expect((await api(method, path, { as: other, body })).status).toBe(401);
  });

  it('a carrier endpoint takes the carrier key and ignores a seller-group key sent with it', async () => {
    const answer = await api('POST', '/v1/delivery/mail-label', {
      as: 'c1',
      headers: { 'x-service-seller-group-key': 'not-a-key' },
      body: { delivery_id: D.c1InTransit, base64: pdf() },
    });
    expect(answer.status).toBe(200);
  });

  it('logs the key owner id and never a raw key', async () => {
    sb.clearRequests();
    await api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' });
    await api('GET', `/seller-group/v1/orders/${order(1)}`);
    const [known, unknown] = sb.requests();
    expect(known).toMatchObject({ endpoint: 'order-get', keyId: G1, status: 200 });
    expect(unknown).toMatchObject({ keyId: null, status: 401 });
    expect(JSON.stringify(sb.requests())).not.toContain('sandbox-seller-group-key');
  });
});

describe('rate limit', () => {
  let limited: SandboxHandle;
  const call = client(() => limited);
  beforeAll(async () => {
    limited = await startSandbox({ ratePerMinute: 5 });
  });
  afterAll(() => limited.close());

  it('the sixth request of a key in a minute gets 429 with Retry-After; 429s do not count; other keys are not held', async () => {
    for (let i = 0; i < 5; i++) expect((await call('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' })).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const answer = await call('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' });
      expect(answer.status).toBe(429);
      expect(answer.body).toEqual({ message: 'Too Many Requests' });
      const retryAfter = Number(answer.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    }
    expect((await call('GET', `/seller-group/v1/orders/${order(6)}`, { as: 'g2' })).status).toBe(200);
    expect((await call('POST', '/v1/delivery/collecting', { as: 'c1', body: {} })).status).toBe(400);
    expect(limited.requests().filter((entry) => entry.fault === 'rate-limited')).toHaveLength(3);
  });

  it('Retry-After is the wait until the oldest request leaves the 60 s window, and refusals are not remembered', () => {
    const limiter = new SlidingWindowLimiter(2);
    expect(limiter.take('k', 0)).toEqual({ isAllowed: true });
    expect(limiter.take('k', 10_000)).toEqual({ isAllowed: true });
    expect(limiter.take('k', 20_500)).toEqual({ isAllowed: false, retryAfterSec: 40 });
    expect(limiter.take('k', 59_999)).toEqual({ isAllowed: false, retryAfterSec: 1 });
    expect(limiter.take('k', 60_000)).toEqual({ isAllowed: true });
    expect(limiter.take('k', 60_001)).toEqual({ isAllowed: false, retryAfterSec: 10 });
    expect(limiter.take('other', 60_001)).toEqual({ isAllowed: true });
  });
});

describe('POST /v1/delivery/collecting', () => {
  it('records an event and moves the delivery to In Transit / Collecting; the same instant in another offset is not processed', async () => {
    const { id } = sb.state.addDelivery({ carrier_id: C1 });
    const first = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: id, event_at: '2025-04-01T10:00:00-03:00' } });
    expect(first).toMatchObject({ status: 200, body: { success: true } });
    const stored = sb.state.deliveries.get(id);
    expect(stored).toMatchObject({ status_name: 'In Transit', sub_status: 'Collecting' });
    expect(stored?.events).toHaveLength(1);
    expect(stored?.events[0]).toMatchObject({ status: 'In Transit', sub_status: 'Collecting', event_at: '2025-04-01T10:00:00-03:00' });

    for (const sameInstant of ['2025-04-01T13:00:00Z', '2025-04-01T13:00:00.000000+00:00', '2025-04-01T15:00:00.0+0200']) {
      const repeat = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: id, event_at: sameInstant } });
      expect(repeat).toMatchObject({ status: 200, body: { success: false } });
    }
    expect(sb.state.deliveries.get(id)?.events).toHaveLength(1);
    expect(
      sb
        .requests()
        .filter((entry) => entry.deliveryId === id)
        .map((entry) => entry.isRepeat),
    ).toEqual([false, true, true, true]);

    const later = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: id, event_at: '2025-04-01T13:00:00.001Z' } });
    expect(later.body).toEqual({ success: true });
    expect(sb.state.deliveries.get(id)?.events).toHaveLength(2);
  });

  it('compares with every earlier event of the delivery, seeded ones included', async () => {
    const answer = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: D.c1InTransit, event_at: '2025-03-05T14:00:00Z' } });
    expect(answer.body).toEqual({ success: false }); // 2025-03-05T11:00:00-03:00 is the seeded DISPATCHED event
  });

  it.each([['2025-04-01T10:00:00'], ['2025-04-01'], ['yesterday'], ['2025-02-30T10:00:00Z'], [1743512400000]])(
    'refuses event_at %s with 400 INVALID_EVENT_AT (shape A)',
    async (eventAt) => {
      const answer = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: D.c1InTransit, event_at: eventAt } });
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: 'INVALID_EVENT_AT', level: 'WARNING', status: 400 });
    },
  );

  it('an unknown delivery or another carrier’s delivery is 404 DELIVERY_NOT_FOUND; a cancelled or failed one is 400', async () => {
    const body = (deliveryId: string) => ({ delivery_id: deliveryId, event_at: '2025-04-02T10:00:00Z' });
    for (const [who, id] of [
      ['c1', uuid('de000000', 999)],
      ['c2', D.c1InTransit],
    ] as const) {
      const answer = await api('POST', '/v1/delivery/collecting', { as: who, body: body(id) });
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual({ code: 'DELIVERY_NOT_FOUND', message: expect.any(String), level: 'WARNING', status: 404, params: { delivery_id: id } });
    }
    for (const id of [D.c1Cancelled, D.c1Failed]) {
      const answer = await api('POST', '/v1/delivery/collecting', { as: 'c1', body: body(id) });
      expect(answer).toMatchObject({ status: 400, body: { code: 'DELIVERY_NOT_ELIGIBLE', params: { delivery_id: id } } });
    }
  });
});

describe('POST /v1/delivery/mail-label', () => {
  it('accepts a PDF with or without the data URI prefix and with whitespace after %%EOF, replacing the earlier label', async () => {
    const { id } = sb.state.addDelivery({ carrier_id: C1 });
    const send = (base64: string, externalId?: string) =>
      api('POST', '/v1/delivery/mail-label', { as: 'c1', body: { delivery_id: id, base64, ...(externalId === undefined ? {} : { external_id: externalId }) } });
    expect(await send(pdf())).toMatchObject({ status: 200, body: {} });
    expect(await send(`data:application/pdf;base64,${pdf()}`)).toMatchObject({ status: 200, body: {} });
    const last = await send(pdf('%PDF-1.7\n%%EOF\r\n \t\n'), 'label-77');
    expect(last).toMatchObject({ status: 200, body: {} });
    expect(sb.state.deliveries.get(id)?.label).toMatchObject({ external_id: 'label-77', replacements: 2, size_bytes: 19 });
    const logged = sb.requests().filter((entry) => entry.deliveryId === id && entry.endpoint === 'label');
    expect(logged.at(-1)?.labelSha256).toBe(sb.state.deliveries.get(id)?.label?.sha256);
  });

  it.each([
    ['no %PDF header', pdf('hello %%EOF')],
    ['no %%EOF trailer', pdf('%PDF-1.4\n1 0 obj\n')],
    ['bytes after %%EOF', pdf('%PDF-1.4\n%%EOF\nextra')],
    ['not base64', '%PDF-1.4 %%EOF'],
    ['an empty file', ''],
  ])('refuses %s with 400 UNAUTHORIZED, level WARNING', async (_what, base64) => {
    const answer = await api('POST', '/v1/delivery/mail-label', { as: 'c1', body: { delivery_id: D.c1InTransit, base64 } });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'UNAUTHORIZED', level: 'WARNING', status: 400, message: expect.any(String) });
  });

  it('404 for an unknown or another carrier’s delivery; 400 DELIVERY_NOT_ELIGIBLE for a cancelled or failed one', async () => {
    for (const [who, id] of [
      ['c1', uuid('de000000', 998)],
      ['c1', D.c2Pending],
    ] as const) {
      const answer = await api('POST', '/v1/delivery/mail-label', { as: who, body: { delivery_id: id, base64: pdf() } });
      expect(answer).toMatchObject({ status: 404, body: { code: 'DELIVERY_NOT_FOUND', level: 'WARNING', status: 404, params: { delivery_id: id } } });
    }
    for (const [who, id] of [
      ['c1', D.c1Cancelled],
      ['c2', D.c2Failed],
    ] as const) {
      const answer = await api('POST', '/v1/delivery/mail-label', { as: who, body: { delivery_id: id, base64: pdf() } });
      expect(answer).toMatchObject({ status: 400, body: { code: 'DELIVERY_NOT_ELIGIBLE', level: 'WARNING' } });
    }
  });
});

describe('PUT /v1/delivery/cte', () => {
  const put = (xml: string, deliveryId = D.c1PendingCte) =>
    api('PUT', '/v1/delivery/cte', { as: 'c1', body: { delivery_id: deliveryId, xml_cte_string: xml } });

  it.each([['cteProc'], ['CTe'], ['CTeOS']] as const)('accepts a %s document that matches the delivery and stores it', async (root) => {
    const xml = cteXml({ vTPrest: '18' }, root);
    expect(await put(xml)).toMatchObject({ status: 200, body: {} });
    expect(sb.state.deliveries.get(D.c1PendingCte)?.cte?.xml).toBe(xml);
  });

  it.each([
    ['ide.cUF', { cUF: '' }],
    ['ide.nCT', { nCT: '' }],
    ['ide.dhEmi', { dhEmi: '' }],
    ['emit.CNPJ', { CNPJ: '' }],
    ['vPrest.vTPrest', { vTPrest: '' }],
    ['dest.CNPJ|dest.CPF', { dest: '' }],
    ['ide.nCT', { nCT: '1005' }],
    ['vPrest.vTPrest', { vTPrest: '18.01' }],
    ['emit.CNPJ', { CNPJ: '98765432000110' }],
    ['dest.CNPJ|dest.CPF', { dest: '<CPF>00000000003</CPF>' }],
    ['ide.dhEmi', { dhEmi: '2025-03-02 10:00' }],
  ] as const)('refuses a missing or different %s with 400 CTE_VALIDATION_ERROR', async (field, values) => {
    const answer = await put(cteXml(values));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'CTE_VALIDATION_ERROR', level: 'WARNING', status: 400, params: { field } });
  });

  it('refuses a document without infCte, with a DOCTYPE, or that is not XML', async () => {
    expect((await put('<cteProc><CTe></CTe></cteProc>')).body.params.field).toBe('infCte');
    const doctype = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>${cteXml().replace(/^<\?xml[^>]*>/, '')}`;
    expect(await put(doctype)).toMatchObject({ status: 400, body: { code: 'CTE_VALIDATION_ERROR', params: { field: 'xml_cte_string' } } });
    expect(await put('<CTe><infCte>')).toMatchObject({ status: 400, body: { code: 'CTE_VALIDATION_ERROR' } });
    expect(await put('<NFe><infNFe/></NFe>')).toMatchObject({ status: 400, body: { code: 'CTE_VALIDATION_ERROR' } });
  });

  it('checks only presence for a delivery without expected values, and answers an unknown delivery with 400 DELIVERY_NOT_FOUND', async () => {
    expect(await put(cteXml({ nCT: '77', dest: '<CNPJ>11222333000181</CNPJ>' }), D.c1InTransit)).toMatchObject({ status: 200 });
    const unknown = uuid('de000000', 997);
    const answer = await put(cteXml(), unknown);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'DELIVERY_NOT_FOUND', message: expect.any(String), level: 'WARNING', status: 400, params: { delivery_id: unknown } });
  });
});

describe('PATCH /v1/carrier/webhook/{webhook_id}', () => {
  it('overwrites the whole registration: what is left out becomes null', async () => {
    const path = `/v1/carrier/webhook/${WEBHOOK_C1}`;
    const full = { url: 'https://one.example/new', headers: { 'x-token': 'abc' }, events: ['DELIVERY_STATUS_CHANGED'] };
    expect(await api('PATCH', path, { as: 'c1', body: full })).toMatchObject({ status: 200, body: {} });
    expect(sb.state.webhooks.get(WEBHOOK_C1)).toMatchObject(full);
    expect(await api('PATCH', path, { as: 'c1', body: { url: 'https://one.example/newer' } })).toMatchObject({ status: 200, body: {} });
    expect(sb.state.webhooks.get(WEBHOOK_C1)).toMatchObject({ url: 'https://one.example/newer', headers: null, events: null });
  });

  it('needs a url, and the webhook must be the caller’s (404 WEBHOOK_NOT_FOUND)', async () => {
    const missing = await api('PATCH', `/v1/carrier/webhook/${WEBHOOK_C1}`, { as: 'c1', body: { headers: {} } });
    expect(missing).toMatchObject({ status: 400, body: { code: 'INVALID_PARAMS', params: { field: 'url' } } });
    for (const id of [WEBHOOK_C2, 'no-such-webhook']) {
      const answer = await api('PATCH', `/v1/carrier/webhook/${id}`, { as: 'c1', body: { url: 'https://x.example' } });
      expect(answer).toMatchObject({ status: 404, body: { code: 'WEBHOOK_NOT_FOUND', level: 'WARNING', params: { webhook_id: id } } });
    }
  });
});

describe('seller-group order endpoints', () => {
  it('GET events by seller identifier and external id returns the order with its deliveries and events, oldest first', async () => {
    const byDocument = await api('GET', '/seller-group/v1/seller/identifier/11222333000181/orders/external_id/shop-order-2/events', { as: 'g1' });
    expect(byDocument.status).toBe(200);
    expect(byDocument.body).toHaveLength(1);
    expect(byDocument.body[0]).toMatchObject({ id: order(2), external_id: 'shop-order-2', last_delivery_type: 'SANDBOX_EXPRESS' });
    expect(byDocument.body[0].deliveries.map((d: { id: string }) => d.id)).toEqual([delivery(3), delivery(4)]);
    const byIdentifier = await api('GET', '/seller-group/v1/seller/identifier/campinas-01/orders/external_id/shop-order-3/events', { as: 'g1' });
    expect(byIdentifier.body[0].deliveries[0].events.map((e: { status: string }) => e.status)).toEqual(['PENDING', 'ORDER_FAILED']);
  });

  it('404 shape C for an unknown order, another group’s order or another group’s seller', async () => {
    for (const path of [`/seller-group/v1/orders/${order(99)}`, `/seller-group/v1/orders/${order(6)}`]) {
      const answer = await api('GET', path, { as: 'g1' });
      expect(answer).toMatchObject({ status: 404 });
      expect(answer.body).toEqual({ message: expect.any(String), code: 'ORDER_NOT_FOUND', status: 'NOT_FOUND' });
    }
    const seller = await api('GET', '/seller-group/v1/seller/identifier/44555666000199/orders/external_id/shop-order-6/events', { as: 'g1' });
    expect(seller.body).toMatchObject({ code: 'SELLER_NOT_FOUND', status: 'NOT_FOUND' });
  });

  it('PUT updates only the fields sent; 400 shape B without a field or with a bad access key; 404 shape B for another group', async () => {
    const path = `/seller-group/v1/orders/${order(1)}`;
    const none = await api('PUT', path, { as: 'g1', body: {} });
    expect(none).toMatchObject({ status: 400 });
    expect(none.body).toEqual({ code: 'INVALID_PARAMS', message: expect.any(String), status: 400 });
    expect(await api('PUT', path, { as: 'g1', body: { access_key: '1'.repeat(43) } })).toMatchObject({ status: 400, body: { status: 400 } });
    expect(await api('PUT', path, { as: 'g1', body: { invoice_number: 'NF-1' } })).toMatchObject({ status: 200, body: { success: true } });
    const key = '3'.repeat(44);
    expect(await api('PUT', path, { as: 'g1', body: { access_key: key } })).toMatchObject({ status: 200, body: { success: true } });
    expect((await api('GET', path, { as: 'g1' })).body).toMatchObject({ invoice_number: 'NF-1', access_key: key, seller: { identifier: '11222333000181' } });
    const foreign = await api('PUT', `/seller-group/v1/orders/${order(6)}`, { as: 'g1', body: { invoice_number: 'x' } });
    expect(foreign).toMatchObject({ status: 404 });
    expect(foreign.body).toEqual({ code: 'INVOICE_NOT_FOUND_OR_NOT_IN_SELLER_GROUP', message: expect.any(String), status: 404 });
  });
});

describe('POST /v1/quotation/orders', () => {
  const volumes = (weight: number) => [{ weight, height: 10, length: 10, width: 10 }];
  const DAY_MS = 86_400_000;

  it('lists methods that have a date, tags fastest/cheapest among those with a price, and sums the global options', async () => {
    const answer = await api('POST', '/v1/quotation/orders', {
      as: 'g1',
      body: {
        seller_identifier: '11222333000181',
        orders: [
          { identifier: 'near', amount: 5000, destination_zip_code: '01310200', volumes: volumes(1500) },
          { identifier: 'far', amount: 7000, destination_zip_code: '90010150', volumes: volumes(500) },
        ],
      },
    });
    expect(answer.status).toBe(200);
    const { body } = answer;
    expect(body).toMatchObject({ seller_identifier: '11222333000181', origin_address_zipcode: '01310100' });
    const [near, far] = body.orders;
    const byName = (quotations: Array<{ method_type: string; method_shipping_price: number | null; tags: string[] }>) =>
      quotations.map((q) => [q.method_type, q.method_shipping_price, q.tags.join('+')]);
    expect(byName(near.quotations)).toEqual([
      ['D0', 3100, 'fastest'],
      ['D1', 1900, ''],
      ['D4', 1000, 'cheapest'],
      ['EXPRESS', null, ''],
    ]);
    expect(byName(far.quotations)).toEqual([
      ['D1', 5300, 'fastest'],
      ['D4', 2700, 'cheapest'],
      ['EXPRESS', null, ''],
    ]);
    for (const q of [...near.quotations, ...far.quotations]) {
      expect(q.method_id).toMatch(UUID_SHAPE);
      expect(q.logistic_id).toMatch(UUID_SHAPE);
      expect(q.tags_object).toEqual({ fastest: q.tags.includes('fastest'), cheapest: q.tags.includes('cheapest') });
    }
    const { fastest, cheapest } = body.optimized_global_quotation;
    expect(fastest.total_orders_shipping_price).toBe(3100 + 5300);
    expect(cheapest.total_orders_shipping_price).toBe(1000 + 2700);
    expect(fastest.orders_quotations.map((q: { identifier: string; method_type: string }) => [q.identifier, q.method_type])).toEqual([
      ['near', 'D0'],
      ['far', 'D1'],
    ]);
    expect(cheapest.orders_quotations[0]).toMatchObject({ identifier: 'near', amount: 5000, destination_zip_code: '01310200', method_type: 'D4' });
    const dayOf = (iso: string) => Date.parse(iso) / DAY_MS;
    expect(dayOf(fastest.max_orders_expected_delivery_date) - dayOf(near.quotations[0].method_expected_delivery_date)).toBe(10);
    expect(cheapest.max_orders_expected_delivery_date).toBe(far.quotations[1].method_expected_delivery_date);
  });

  it('an invalid destination zip code is 400 shape D INVALID_DESTINATION_ZIPCODE', async () => {
    const answer = await api('POST', '/v1/quotation/orders', {
      as: 'g1',
      body: { seller_identifier: '11222333000181', orders: [{ identifier: 'x', amount: 1, destination_zip_code: '0131-020', volumes: volumes(1) }] },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      status_code: 400,
      timestamp: expect.any(String),
      message: expect.any(String),
      code: 'INVALID_DESTINATION_ZIPCODE',
      error_id: expect.stringMatching(UUID_SHAPE),
      params: { destination_zipcode: '0131-020' },
    });
    expect(Number.isNaN(Date.parse(answer.body.timestamp))).toBe(false);
  });
});

describe('faults set in process', () => {
  const getOrder = () => api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' });

  it('errorRate answers 503 {message} before anything else, for about that fraction of requests', async () => {
    sb.setFaults({ errorRate: 1 });
    const answer = await api('GET', `/seller-group/v1/orders/${order(1)}`);
    expect(answer).toMatchObject({ status: 503, body: { message: expect.any(String) } });
    expect(Object.keys(answer.body)).toEqual(['message']);
    expect(sb.requests().at(-1)).toMatchObject({ status: 503, fault: 'error' });
    sb.setFaults({ errorRate: 0.5 });
    const statuses = await Promise.all(Array.from({ length: 200 }, async () => (await getOrder()).status));
    const failures = statuses.filter((status) => status === 503).length;
    expect(failures).toBeGreaterThan(50);
    expect(failures).toBeLessThan(150);
    expect(statuses.every((status) => status === 503 || status === 200)).toBe(true);
  });

  it('resetRate destroys the socket without an answer', async () => {
    sb.setFaults({ resetRate: 1 });
    await expect(getOrder()).rejects.toThrow();
    expect(sb.requests().at(-1)).toMatchObject({ status: 0, fault: 'reset', endpoint: 'order-get' });
    sb.setFaults({ resetRate: 0 });
    expect((await getOrder()).status).toBe(200);
  });

  it('a 401 window refuses even good keys until it ends', async () => {
    sb.setFaults({ unauthorizedUntil: Date.now() + 60_000 });
    expect(await getOrder()).toMatchObject({ status: 401, body: { message: 'Unauthorized' } });
    expect(sb.requests().at(-1)).toMatchObject({ fault: 'unauthorized' });
    sb.setFaults({ unauthorizedUntil: Date.now() - 1 });
    expect((await getOrder()).status).toBe(200);
  });

  it('a rate-limit storm answers 429 with the configured Retry-After', async () => {
    sb.setFaults({ rateLimitStormUntil: Date.now() + 60_000, stormRetryAfterSec: 3 });
    const answer = await getOrder();
    expect(answer).toMatchObject({ status: 429, body: { message: 'Too Many Requests' } });
    expect(answer.headers.get('retry-after')).toBe('3');
    expect(sb.requests().at(-1)).toMatchObject({ fault: 'storm', keyId: G1 });
  });

  it('latency delays the answer', async () => {
    sb.setFaults({ latencyMs: 80, latencyJitterMs: 20 });
    const started = Date.now();
    expect((await getOrder()).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(79);
    expect(sb.requests().at(-1)?.durationMs).toBeGreaterThanOrEqual(79);
  });

  it('refuses invalid fault values', () => {
    expect(() => sb.setFaults({ errorRate: 2 })).toThrow(/errorRate/);
  });
});

describe('control over HTTP', () => {
  it('PATCH /_sandbox/faults applies faults to the API but never to control routes', async () => {
    expect(await api('PATCH', '/_sandbox/faults', { body: { errorRate: 1, resetRate: 0 } })).toMatchObject({ status: 200, body: { errorRate: 1 } });
    expect((await api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' })).status).toBe(503);
    expect(await api('GET', '/_sandbox/faults')).toMatchObject({ status: 200, body: { errorRate: 1, unauthorizedUntil: null } });
    await api('PATCH', '/_sandbox/faults', { body: { errorRate: 0, unauthorizedForMs: 60_000 } });
    expect((await api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' })).status).toBe(401);
    await api('PATCH', '/_sandbox/faults', { body: { unauthorizedUntil: null, rateLimitStormForMs: 60_000, stormRetryAfterSec: 7 } });
    const storm = await api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' });
    expect([storm.status, storm.headers.get('retry-after')]).toEqual([429, '7']);
    expect(await api('PATCH', '/_sandbox/faults', { body: { errorRate: 2 } })).toMatchObject({ status: 400, body: { message: expect.any(String) } });
    expect(await api('PATCH', '/_sandbox/faults', { body: { bogus: 1 } })).toMatchObject({ status: 400 });
  });

  it('/_sandbox/requests lists entries after a seq and can be emptied; control calls are not logged', async () => {
    await api('GET', `/seller-group/v1/orders/${order(1)}`, { as: 'g1' });
    const all = (await api('GET', '/_sandbox/requests')).body as Array<{ seq: number; endpoint: string }>;
    const last = all.at(-1);
    expect(last).toMatchObject({ endpoint: 'order-get' });
    await api('GET', `/seller-group/v1/orders/${order(2)}`, { as: 'g1' });
    const since = (await api('GET', `/_sandbox/requests?since=${last?.seq ?? 0}`)).body;
    expect(since).toHaveLength(1);
    expect(since[0]).toMatchObject({ seq: (last?.seq ?? 0) + 1, path: `/seller-group/v1/orders/${order(2)}` });
    expect(all.some((entry) => entry.endpoint === 'control')).toBe(false);
    expect((await api('DELETE', '/_sandbox/requests')).status).toBe(204);
    expect((await api('GET', '/_sandbox/requests')).body).toEqual([]);
    expect(sb.requests()).toEqual([]);
  });

  it('/_sandbox/deliveries creates one or many deliveries, shows and re-states them', async () => {
    const one = await api('POST', '/_sandbox/deliveries', { body: { carrier_id: C2, external_id: 'made-over-http' } });
    expect(one).toMatchObject({ status: 201, body: { carrier_id: C2, status_name: 'PENDING', sub_status: 'WAITING_FOR_CARRIER', events: [] } });
    const ids = [uuid('de000000', 501), uuid('de000000', 502)];
    const many = await api('POST', '/_sandbox/deliveries', { body: ids.map((id) => ({ id, carrier_id: C1 })) });
    expect(many.status).toBe(201);
    expect(many.body.map((d: { id: string }) => d.id)).toEqual(ids);
    expect((await api('POST', '/_sandbox/deliveries', { body: { id: ids[0] } })).status).toBe(409);
    expect((await api('POST', '/_sandbox/deliveries', { body: { carrier_id: 'nope' } })).status).toBe(400);

    await api('POST', '/v1/delivery/collecting', { as: 'c1', body: { delivery_id: ids[0], event_at: '2025-05-01T08:00:00Z' } });
    const shown = await api('GET', `/_sandbox/deliveries/${ids[0]}`);
    expect(shown.body).toMatchObject({ status_name: 'In Transit', sub_status: 'Collecting', events: [{ event_at: '2025-05-01T08:00:00Z' }] });
    expect(await api('PATCH', `/_sandbox/deliveries/${ids[1]}`, { body: { status_name: 'CANCELLED' } })).toMatchObject({
      status: 200,
      body: { status_name: 'CANCELLED', sub_status: null },
    });
    expect((await api('POST', '/v1/delivery/mail-label', { as: 'c1', body: { delivery_id: ids[1], base64: pdf() } })).body.code).toBe('DELIVERY_NOT_ELIGIBLE');
    expect((await api('GET', `/_sandbox/deliveries/${uuid('de000000', 503)}`)).status).toBe(404);
  });
});

describe('options', () => {
  let other: SandboxHandle;
  const call = client(() => other);
  beforeAll(async () => {
    other = await startSandbox({ autoCreateDeliveries: true, bodyLimitBytes: 2048 });
  });
  afterAll(() => other.close());

  it('autoCreateDeliveries creates unknown UUID-shaped deliveries for the calling carrier on first use', async () => {
    const id = uuid('de000000', 700);
    expect((await call('POST', '/v1/delivery/collecting', { as: 'c2', body: { delivery_id: id, event_at: '2025-06-01T10:00:00Z' } })).body).toEqual({
      success: true,
    });
    expect(other.state.deliveries.get(id)).toMatchObject({ carrier_id: C2, status_name: 'In Transit' });
    expect((await call('POST', '/v1/delivery/collecting', { as: 'c2', body: { delivery_id: 'not-a-uuid', event_at: '2025-06-01T10:00:00Z' } })).status).toBe(
      404,
    );
  });

  it('a body over the limit gets 413 in the endpoint’s shape; a body that is not JSON gets 400', async () => {
    const big = await call('POST', '/v1/delivery/mail-label', { as: 'c2', body: { delivery_id: uuid('de000000', 701), base64: 'A'.repeat(4096) } });
    expect(big).toMatchObject({ status: 413, body: { level: 'WARNING', status: 413 } });
    const broken = await call('POST', '/v1/quotation/orders', { as: 'g2', body: '{"orders": [' });
    expect(broken).toMatchObject({ status: 400, body: { status_code: 400, error_id: expect.stringMatching(UUID_SHAPE) } });
  });
});

describe('seed', () => {
  const minimal = (): SandboxSeed => ({
    carriers: [
      {
        id: C1,
        name: 'Only',
        key: 'only-carrier-key',
        kind: 'ONLY',
        logistic_id: uuid('ab000000', 9),
        methods: [
          {
            id: uuid('ee000000', 9),
            name: 'Local',
            method_type: 'D1',
            shipping_method_type: 'EXPRESS',
            quote: { base_price: 100, transit_days: 1, serves_zip_prefixes: ['2'] },
          },
        ],
      },
    ],
    seller_groups: [
      {
        id: G1,
        name: 'G',
        key: 'only-seller-key',
        sellers: [{ id: uuid('5e110000', 9), company_name: 'S', trading_name: 'S', document_number: '11222333000181', origin_zip_code: '20040002' }],
      },
    ],
  });

  it('accepts a seed object; an order nobody serves gets empty quotations and stays out of the global options', async () => {
    const small = await startSandbox({ seed: minimal() });
    try {
      const answer = await client(() => small)('POST', '/v1/quotation/orders', {
        as: 'g1',
        body: { seller_identifier: '11222333000181', orders: [{ identifier: 'far', amount: 1, destination_zip_code: '90010150', volumes: [] }] },
      });
      expect(answer.status).toBe(200);
      expect(answer.body.orders[0].quotations).toEqual([]);
      expect(answer.body.optimized_global_quotation.fastest).toEqual({
        total_orders_shipping_price: 0,
        max_orders_expected_delivery_date: null,
        orders_quotations: [],
      });
    } finally {
      await small.close();
    }
  });

  it('refuses an invalid or inconsistent seed with a message naming the problem', async () => {
    const broken = minimal();
    broken.carriers[0]!.id = 'not-a-uuid';
    await expect(startSandbox({ seed: broken })).rejects.toThrow(/carriers\[0\]\.id|carriers\.0\.id/);
    const dangling = { ...minimal(), webhooks: [{ webhook_id: 'w', carrier_id: C2, url: 'https://x.example' }] };
    await expect(startSandbox({ seed: dangling })).rejects.toThrow(/webhook w: unknown carrier_id/);
    await expect(startSandbox({ seed: '/nonexistent/seed.json' })).rejects.toThrow(/cannot be read/);
  });
});
