/**
 * Contract tests: the API client against the sandbox over real HTTP. Every endpoint's success and
 * every error shape of api-contract.md §7 goes through the client, plus the faults the daemon must
 * survive (timeouts, resets, 503, the 401 window, 429s). A few wire details the sandbox cannot
 * show (which headers went out, a 2xx with garbage) use a plain node:http recorder.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient, type ApiClientOptions, type ResponseSample } from '../../src/api/index.js';
import { SyncError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/server.js';

// Ids from config/sandbox-seed.json.
const CARRIER_1 = 'ca000000-0000-4000-8000-000000000001';
const GROUP_1 = '5e000000-0000-4000-8000-000000000001';
const DELIVERY_PENDING_C1 = 'de000000-0000-4000-8000-000000000004'; // carrier 1, PENDING, has cte_expect
const DELIVERY_CANCELLED_C1 = 'de000000-0000-4000-8000-000000000001';
const DELIVERY_SUCCESSFUL_C1 = 'de000000-0000-4000-8000-000000000011';
const DELIVERY_OF_C2 = 'de000000-0000-4000-8000-000000000002';
const UNKNOWN_DELIVERY = 'de000000-0000-4000-8000-0000000000ff';
const WEBHOOK_C1 = 'fb000000-0000-4000-8000-000000000001';
const WEBHOOK_C2 = 'fb000000-0000-4000-8000-000000000002';
const SELLER_1 = '11222333000181'; // identifier defaults to the document number
const ORDER_G1 = 'aa000000-0000-4000-8000-000000000001'; // external_id shop-order-1, seller 1
const ORDER_G2 = 'aa000000-0000-4000-8000-000000000006';
const ACCESS_KEY = '3'.repeat(44);

const PDF = Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n');
const cteXml = (fields: { nCT?: string; emit?: string } = {}): string =>
  '<?xml version="1.0" encoding="UTF-8"?><CTe xmlns="http://www.portalfiscal.inf.br/cte">' +
  '<infCte Id="CTe35250312345678000195570010000010041000010041" versao="4.00">' +
  `<ide><cUF>35</cUF><nCT>${fields.nCT ?? '1004'}</nCT><dhEmi>2025-03-03T10:00:00-03:00</dhEmi></ide>` +
  (fields.emit === '' ? '' : `<emit><CNPJ>${fields.emit ?? '12345678000195'}</CNPJ></emit>`) +
  '<dest><CPF>00000000002</CPF></dest><vPrest><vTPrest>18.00</vTPrest></vPrest></infCte></CTe>';

const ORDER_FIELDS = [
  'id',
  'order_number',
  'external_id',
  'tracking',
  'status_name',
  'sub_status',
  'invoice_number',
  'access_key',
  'invoice_created_timestamp',
  'amount',
  'type',
  'created_at',
  'last_delivery_type',
  'last_delivery_method_name',
  'last_delivery_shipping_method_type',
];
const FULL_ORDER_FIELDS = [
  ...ORDER_FIELDS,
  'creation_origin',
  'last_delivery_external_id',
  'last_delivery_support_id',
  'last_delivery_collect_eta',
  'last_delivery_collect_verification_code',
  'last_delivery_delivery_eta',
  'last_delivery_delivery_verification_code',
  'last_delivery_return_eta',
  'last_delivery_return_verification_code',
  'additional_information',
  'carrier_additional_information',
  'estimated_route_distance',
  'estimated_straight_distance',
  'expected_customer_shipping_price',
  'expected_customer_shipping_date',
  'last_delivery_expected_delivery_price',
  'last_delivery_expected_delivery_date',
  'customer_purchase_experience_rating',
  'customer_delivery_experience_rating',
  'customer_feedback_comment',
  'delivery_window_start',
  'delivery_window_end',
  'delivery_service_time',
  'seller',
  'customer',
  'destination_address',
  'volumes',
];
const DELIVERY_FIELDS = [
  'id',
  'external_id',
  'support_id',
  'type',
  'method_name',
  'shipping_method_type',
  'status_name',
  'sub_status',
  'driver_name',
  'driver_document',
  'driver_phone',
  'driver_vehicle_type',
  'driver_vehicle_color',
  'driver_vehicle_plate',
  'driver_image_url',
  'expected_delivery_date',
  'expected_delivery_price',
  'created_at',
  'collect_eta',
  'delivery_eta',
  'manual_delivery',
  'scheduled_at',
  'events',
];
const EVENT_FIELDS = [
  'id',
  'status',
  'sub_status',
  'failure_code',
  'failure_message',
  'failure_driver_message',
  'observation',
  'driver_name',
  'driver_document',
  'driver_phone',
  'driver_vehicle_type',
  'driver_vehicle_color',
  'driver_vehicle_plate',
  'driver_image_url',
  'latitude',
  'longitude',
  'manual_event',
  'event_at',
  'created_at',
];

let sandbox: SandboxHandle;
let client: ApiClient;
let carrierKey: string;
let sellerGroupKey: string;
const samples: ResponseSample[] = [];
const logLines: string[] = [];
const opened: ApiClient[] = [];

function makeClient(url: string, overrides: Partial<ApiClientOptions> = {}): ApiClient {
  const made = createApiClient({
    baseUrl: url,
    carrierKey,
    sellerGroupKey,
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    bodyTimeoutMs: 5000,
    connections: 4,
    ...overrides,
  });
  opened.push(made);
  return made;
}

/** The SyncError a call rejects with; fails the test when it resolves. */
async function failure(promise: Promise<unknown>): Promise<SyncError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a SyncError, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(SyncError);
  return outcome.error as SyncError;
}

function expectNoKeys(error: SyncError): void {
  const text = `${error.message} ${JSON.stringify(error.toJSON())} ${String(error.cause)}`;
  for (const key of [carrierKey, sellerGroupKey]) expect(text).not.toContain(key);
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  carrierKey = sandbox.keys.carriers[CARRIER_1] ?? '';
  sellerGroupKey = sandbox.keys.sellerGroups[GROUP_1] ?? '';
  const destination = new Writable({ write: (chunk: Buffer, _enc, done) => (logLines.push(chunk.toString()), done()) });
  client = makeClient(sandbox.url, {
    logger: createLogger({ level: 'debug', destination }),
    onResponse: (sample) => samples.push(sample),
  });
});

afterEach(() => {
  sandbox.setFaults({ errorRate: 0, resetRate: 0, latencyMs: 0, latencyJitterMs: 0, rateLimitStormUntil: null, unauthorizedUntil: null });
});

afterAll(async () => {
  await Promise.all(opened.map((each) => each.close()));
  await sandbox.close();
});

describe('4.1 collecting', () => {
  it('records the event (isProcessed) and answers a repeat of the same instant with isProcessed false', async () => {
    const { id } = sandbox.state.addDelivery({ carrier_id: CARRIER_1 });
    await expect(client.sendCollecting({ deliveryId: id, eventAt: '2025-03-10T09:00:00-03:00' })).resolves.toEqual({ isProcessed: true });
    expect(sandbox.state.deliveries.get(id)).toMatchObject({ status_name: 'In Transit', sub_status: 'Collecting' });
    const repeat = await client.sendCollecting({ deliveryId: id, eventAt: '2025-03-10T12:00:00.000Z' });
    expect(repeat).toEqual({ isProcessed: false });
  });
  it('unknown delivery → API_NOT_FOUND with the API code and params (shape A)', async () => {
    const error = await failure(client.sendCollecting({ deliveryId: UNKNOWN_DELIVERY, eventAt: '2025-03-10T09:00:00Z' }));
    expect(error).toMatchObject({
      code: 'API_NOT_FOUND',
      status: 404,
      apiCode: 'DELIVERY_NOT_FOUND',
      apiLevel: 'WARNING',
      params: { delivery_id: UNKNOWN_DELIVERY },
    });
  });
  it('a finished delivery is rejected (dead-letter)', async () => {
    const error = await failure(client.sendCollecting({ deliveryId: DELIVERY_SUCCESSFUL_C1, eventAt: '2025-03-10T09:00:00Z' }));
    expect(error).toMatchObject({ code: 'API_REJECTED', disposition: 'dead-letter', status: 400 });
  });
});

describe('4.2 CT-e', () => {
  it('replaces the XML of the delivery, double quotes and all', async () => {
    await expect(client.putCte({ deliveryId: DELIVERY_PENDING_C1, xml: cteXml() })).resolves.toBeUndefined();
    expect(sandbox.state.deliveries.get(DELIVERY_PENDING_C1)?.cte?.xml).toBe(cteXml());
  });
  it('unknown delivery: 400 DELIVERY_NOT_FOUND → API_NOT_FOUND, status 400 kept', async () => {
    const error = await failure(client.putCte({ deliveryId: UNKNOWN_DELIVERY, xml: cteXml() }));
    expect(error).toMatchObject({
      code: 'API_NOT_FOUND',
      disposition: 'retry',
      status: 400,
      apiCode: 'DELIVERY_NOT_FOUND',
      params: { delivery_id: UNKNOWN_DELIVERY },
    });
  });
  it.each([
    ['a missing field', { emit: '' }, 'emit.CNPJ'],
    ['a value that does not match the delivery', { nCT: '9999' }, 'ide.nCT'],
  ])('%s → API_REJECTED CTE_VALIDATION_ERROR', async (_what, fields, field) => {
    const error = await failure(client.putCte({ deliveryId: DELIVERY_PENDING_C1, xml: cteXml(fields) }));
    expect(error).toMatchObject({ code: 'API_REJECTED', status: 400, apiCode: 'CTE_VALIDATION_ERROR', apiLevel: 'WARNING', params: { field } });
  });
});

describe('4.3 label', () => {
  it('attaches the PDF with its external_id, and a resend replaces it', async () => {
    const pdfBase64 = PDF.toString('base64');
    await client.sendLabel({ deliveryId: DELIVERY_PENDING_C1, pdfBase64, externalId: 'ext-42' });
    await client.sendLabel({ deliveryId: DELIVERY_PENDING_C1, pdfBase64: `data:application/pdf;base64,${pdfBase64}`, externalId: null });
    expect(sandbox.state.deliveries.get(DELIVERY_PENDING_C1)?.label).toMatchObject({
      sha256: createHash('sha256').update(PDF).digest('hex'),
      external_id: null,
      replacements: 1,
    });
  });
  it('not a PDF: 400 with code UNAUTHORIZED is API_REJECTED, not a bad key', async () => {
    const error = await failure(client.sendLabel({ deliveryId: DELIVERY_PENDING_C1, pdfBase64: Buffer.from('hello').toString('base64') }));
    expect(error).toMatchObject({ code: 'API_REJECTED', disposition: 'dead-letter', status: 400, apiCode: 'UNAUTHORIZED', apiLevel: 'WARNING' });
  });
  it.each([
    ['an unknown delivery', UNKNOWN_DELIVERY],
    ["another carrier's delivery", DELIVERY_OF_C2],
  ])('%s → 404 API_NOT_FOUND', async (_what, deliveryId) => {
    const error = await failure(client.sendLabel({ deliveryId, pdfBase64: PDF.toString('base64') }));
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404, apiCode: 'DELIVERY_NOT_FOUND', params: { delivery_id: deliveryId } });
  });
  it('a cancelled delivery is rejected', async () => {
    const error = await failure(client.sendLabel({ deliveryId: DELIVERY_CANCELLED_C1, pdfBase64: PDF.toString('base64') }));
    expect(error).toMatchObject({ code: 'API_REJECTED', status: 400 });
  });
});

describe('4.4 webhook', () => {
  it('overwrites the whole record, events included', async () => {
    const record = { url: 'https://carrier-one.example/new', headers: { 'x-token': 't' }, events: ['DELIVERY_CREATED'] };
    await client.patchWebhook(WEBHOOK_C1, record);
    expect(sandbox.state.webhooks.get(WEBHOOK_C1)).toMatchObject(record);
    await client.patchWebhook(WEBHOOK_C1, { ...record, headers: null });
    expect(sandbox.state.webhooks.get(WEBHOOK_C1)?.headers).toBeNull();
  });
  it.each([
    ['an unknown webhook', 'no-such-hook'],
    ["another carrier's webhook", WEBHOOK_C2],
  ])('%s → API_NOT_FOUND', async (_what, id) => {
    const error = await failure(client.patchWebhook(id, { url: 'https://x.example/', headers: null, events: [] }));
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404 });
  });
});

describe('4.5–4.8 seller-group endpoints', () => {
  it('4.5 returns the events view with every field of §2.2–2.4', async () => {
    const views = await client.getOrderEvents(SELLER_1, 'shop-order-1');
    expect(views).toHaveLength(1);
    const [view] = views;
    for (const field of [...ORDER_FIELDS, 'deliveries']) expect(view).toHaveProperty(field);
    const delivery = view?.deliveries[0];
    for (const field of DELIVERY_FIELDS) expect(delivery).toHaveProperty(field);
    for (const field of EVENT_FIELDS) expect(delivery?.events[0]).toHaveProperty(field);
  });
  it('4.5 unknown external id → API_NOT_FOUND (shape C); path parameters are encoded', async () => {
    const error = await failure(client.getOrderEvents(SELLER_1, 'no such/order?'));
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404, apiCode: 'ORDER_NOT_FOUND' });
    expect(sandbox.requests().at(-1)?.path).toContain('/orders/external_id/no%20such%2Forder%3F/events');
  });
  it('4.6 returns the order with every field of §2.1', async () => {
    const order = await client.getOrder(ORDER_G1);
    expect(order.id).toBe(ORDER_G1);
    for (const field of FULL_ORDER_FIELDS) expect(order).toHaveProperty(field);
  });
  it.each([
    ['an unknown order', 'aa000000-0000-4000-8000-0000000000ff'],
    ["another group's order", ORDER_G2],
  ])('4.6 %s → 404 shape C ORDER_NOT_FOUND → API_NOT_FOUND', async (_what, orderId) => {
    const error = await failure(client.getOrder(orderId));
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404, apiCode: 'ORDER_NOT_FOUND' });
    expect(error.apiMessage).toBeTruthy();
  });
  it('4.7 updates the invoice data', async () => {
    await expect(client.updateOrder(ORDER_G1, { invoiceNumber: 'NF-77', accessKey: ACCESS_KEY })).resolves.toEqual({ success: true });
    expect(sandbox.state.orders.get(ORDER_G1)).toMatchObject({ invoice_number: 'NF-77', access_key: ACCESS_KEY });
  });
  it('4.7 without any field → 400 shape B INVALID_PARAMS → API_REJECTED', async () => {
    const error = await failure(client.updateOrder(ORDER_G1, {}));
    expect(error).toMatchObject({ code: 'API_REJECTED', status: 400, apiCode: 'INVALID_PARAMS' });
    expect(error.apiLevel).toBeUndefined();
  });
  it('4.7 unknown order → 404 INVOICE_NOT_FOUND_OR_NOT_IN_SELLER_GROUP → API_NOT_FOUND', async () => {
    const error = await failure(client.updateOrder(ORDER_G2, { invoiceNumber: 'NF-1' }));
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404, apiCode: 'INVOICE_NOT_FOUND_OR_NOT_IN_SELLER_GROUP' });
  });
  const quote = (zip: string) =>
    client.quoteOrders({
      sellerIdentifier: SELLER_1,
      orders: [{ identifier: 'o-1', amount: 10_000, destinationZipCode: zip, volumes: [{ weight: 1200, height: 10, length: 20, width: 30 }] }],
    });
  it('4.8 quotes the orders', async () => {
    const response = await quote('01310100');
    expect(response).toMatchObject({ seller_identifier: SELLER_1, orders: [{ identifier: 'o-1', destination_zip_code: '01310100' }] });
    expect(response.orders[0]?.quotations.length).toBeGreaterThan(0);
    expect(response.optimized_global_quotation.cheapest.orders_quotations[0]).toMatchObject({ identifier: 'o-1' });
  });
  it('4.8 invalid zip → 400 shape D INVALID_DESTINATION_ZIPCODE → API_REJECTED with params and error_id', async () => {
    const error = await failure(quote('123'));
    expect(error).toMatchObject({ code: 'API_REJECTED', status: 400, apiCode: 'INVALID_DESTINATION_ZIPCODE', params: { destination_zipcode: '123' } });
    expect(error.message).toMatch(/error_id [0-9a-f-]{36}/);
  });
  it('without a seller-group key, every seller call fails CONFIG_INVALID before any I/O', async () => {
    const carrierOnly = makeClient(sandbox.url, { sellerGroupKey: null });
    sandbox.clearRequests();
    const errors = await Promise.all(
      [
        carrierOnly.getOrderEvents(SELLER_1, 'x'),
        carrierOnly.getOrder(ORDER_G1),
        carrierOnly.updateOrder(ORDER_G1, {}),
        carrierOnly.quoteOrders({ sellerIdentifier: SELLER_1, orders: [] }),
      ].map(failure),
    );
    for (const error of errors) expect(error).toMatchObject({ code: 'CONFIG_INVALID', disposition: 'reject-local' });
    expect(sandbox.requests()).toHaveLength(0);
    await expect(carrierOnly.sendCollecting({ deliveryId: UNKNOWN_DELIVERY, eventAt: '2025-03-10T09:00:00Z' })).rejects.toMatchObject({
      code: 'API_NOT_FOUND',
    });
  });
});

describe('keys and faults', () => {
  it('a wrong key → 401 shape E → API_UNAUTHORIZED (pause); the key is nowhere in the error', async () => {
    const wrong = makeClient(sandbox.url, { carrierKey: 'not-a-key', sellerGroupKey: 'not-a-key-either' });
    const errors = await Promise.all(
      [wrong.sendLabel({ deliveryId: DELIVERY_PENDING_C1, pdfBase64: PDF.toString('base64') }), wrong.getOrder(ORDER_G1)].map(failure),
    );
    for (const error of errors) {
      expect(error).toMatchObject({ code: 'API_UNAUTHORIZED', disposition: 'pause', status: 401, apiMessage: 'Unauthorized' });
      expect(error.apiCode).toBeUndefined();
      expectNoKeys(error);
    }
  });
  it('the 401 window pauses every endpoint, then lifts', async () => {
    sandbox.setFaults({ unauthorizedUntil: Date.now() + 60_000 });
    expect(await failure(client.getOrder(ORDER_G1))).toMatchObject({ code: 'API_UNAUTHORIZED', status: 401 });
    expect(await failure(client.putCte({ deliveryId: DELIVERY_PENDING_C1, xml: cteXml() }))).toMatchObject({ code: 'API_UNAUTHORIZED' });
    sandbox.setFaults({ unauthorizedUntil: null });
    await expect(client.getOrder(ORDER_G1)).resolves.toMatchObject({ id: ORDER_G1 });
  });
  it('a reply slower than headersTimeoutMs → TIMEOUT, sampled as "timeout"', async () => {
    const impatient = makeClient(sandbox.url, { headersTimeoutMs: 200, onResponse: (sample) => samples.push(sample) });
    sandbox.setFaults({ latencyMs: 1500 });
    const error = await failure(impatient.getOrder(ORDER_G1));
    expect(error).toMatchObject({ code: 'TIMEOUT', disposition: 'retry' });
    expect(samples.at(-1)).toMatchObject({ endpoint: 'order-get', status: 'timeout' });
    expectNoKeys(error);
  });
  it('a socket reset → NETWORK, sampled as "network"', async () => {
    sandbox.setFaults({ resetRate: 1 });
    const error = await failure(client.sendLabel({ deliveryId: DELIVERY_PENDING_C1, pdfBase64: PDF.toString('base64') }));
    expect(error).toMatchObject({ code: 'NETWORK', disposition: 'retry' });
    expect(samples.at(-1)).toMatchObject({ endpoint: 'label', status: 'network' });
  });
  it('a refused connection → NETWORK', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    expect(await failure(makeClient(`http://127.0.0.1:${port}`).getOrder(ORDER_G1))).toMatchObject({ code: 'NETWORK' });
  });
  it('503 → API_UNAVAILABLE (retry)', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const error = await failure(client.sendCollecting({ deliveryId: DELIVERY_PENDING_C1, eventAt: '2025-03-10T09:00:00Z' }));
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE', disposition: 'retry', status: 503 });
  });
  it('a 429 storm with Retry-After: 3 → API_RATE_LIMITED holding 3 s', async () => {
    sandbox.setFaults({ rateLimitStormUntil: Date.now() + 60_000, stormRetryAfterSec: 3 });
    const error = await failure(client.getOrder(ORDER_G1));
    expect(error).toMatchObject({ code: 'API_RATE_LIMITED', disposition: 'rate-limited', status: 429, retryAfterMs: 3000 });
  });
  it('past the rate limit → 429 with the Retry-After the API computed', async () => {
    const limited = await startSandbox({ port: 0, ratePerMinute: 2 });
    try {
      const tight = makeClient(limited.url);
      await tight.getOrder(ORDER_G1);
      await tight.getOrder(ORDER_G1);
      const error = await failure(tight.getOrder(ORDER_G1));
      expect(error).toMatchObject({ code: 'API_RATE_LIMITED', status: 429 });
      expect(error.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
    } finally {
      await limited.close();
    }
  });
  it('logs each request as { endpoint, status, durationMs } and never a key', () => {
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === 'api request');
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      const { level, time, pid, mod, msg, endpoint, status, durationMs, ...rest } = line;
      expect(rest).toEqual({});
      expect({ level, mod, msg, pid: typeof pid, time: typeof time }).toMatchObject({ level: 20, mod: 'api', pid: 'number', time: 'number' });
      expect(typeof endpoint).toBe('string');
      expect(['number', 'string']).toContain(typeof status);
      expect(typeof durationMs).toBe('number');
    }
    for (const key of [carrierKey, sellerGroupKey]) expect(logLines.join('')).not.toContain(key);
  });
  it('close() is idempotent and later calls fail NETWORK without I/O', async () => {
    const closing = makeClient(sandbox.url);
    await closing.close();
    await closing.close();
    expect(await failure(closing.getOrder(ORDER_G1))).toMatchObject({ code: 'NETWORK' });
  });
});

describe('on the wire (recorded by a plain HTTP server)', () => {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];
  let reply = { status: 200, body: '{"success":true}' };
  let recorder: Server;
  let wire: ApiClient;
  beforeAll(async () => {
    recorder = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
        response.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
      });
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
    wire = makeClient(`http://127.0.0.1:${(recorder.address() as AddressInfo).port}/base/`);
  });
  afterAll(async () => {
    await wire.close();
    await new Promise((resolve) => recorder.close(resolve));
  });
  const keysOf = (headers: IncomingHttpHeaders) => ({
    carrier: headers['x-service-carrier-key'],
    seller: headers['x-service-seller-group-key'],
  });

  it('sends each endpoint its keys: 4.1/4.2 both, 4.3/4.4 carrier, 4.5–4.8 seller group', async () => {
    reply = { status: 200, body: '{"success":true,"id":"o","orders":[]}' };
    seen.length = 0;
    await wire.sendCollecting({ deliveryId: 'd', eventAt: '2025-03-10T09:00:00Z' });
    await wire.putCte({ deliveryId: 'd', xml: '<a b="c"/>' });
    await wire.sendLabel({ deliveryId: 'd', pdfBase64: 'QUJD', externalId: null });
    await wire.patchWebhook('w/1', { url: 'https://x.example/', headers: null, events: ['E'] });
    await wire.getOrder('o');
    await wire.updateOrder('o', { accessKey: ACCESS_KEY });
    await wire.quoteOrders({ sellerIdentifier: 's', orders: [] });
    const both = { carrier: carrierKey, seller: sellerGroupKey };
    const carrier = { carrier: carrierKey, seller: undefined };
    const seller = { carrier: undefined, seller: sellerGroupKey };
    expect(seen.map((request) => [request.method, request.url, keysOf(request.headers)])).toEqual([
      ['POST', '/base/v1/delivery/collecting', both],
      ['PUT', '/base/v1/delivery/cte', both],
      ['POST', '/base/v1/delivery/mail-label', carrier],
      ['PATCH', '/base/v1/carrier/webhook/w%2F1', carrier],
      ['GET', '/base/seller-group/v1/orders/o', seller],
      ['PUT', '/base/seller-group/v1/orders/o', seller],
      ['POST', '/base/v1/quotation/orders', seller],
    ]);
    expect(seen.map((request) => request.body && JSON.parse(request.body))).toEqual([
      { delivery_id: 'd', event_at: '2025-03-10T09:00:00Z' },
      { delivery_id: 'd', xml_cte_string: '<a b="c"/>' },
      { delivery_id: 'd', base64: 'QUJD' },
      { url: 'https://x.example/', headers: null, events: ['E'] },
      '',
      { access_key: ACCESS_KEY },
      { seller_identifier: 's', orders: [] },
    ]);
    expect(seen[1]?.body).toContain('\\"c\\"');
    expect(seen[0]?.headers['content-type']).toBe('application/json');
  });
  it('a 2xx whose body is needed but unreadable → API_UNAVAILABLE with the body kept', async () => {
    reply = { status: 200, body: '<html>maintenance</html>' };
    const error = await failure(wire.sendCollecting({ deliveryId: 'd', eventAt: '2025-03-10T09:00:00Z' }));
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE', status: 200, body: '<html>maintenance</html>' });
    reply = { status: 200, body: '{"success":"yes"}' };
    expect(await failure(wire.updateOrder('o', { invoiceNumber: '1' }))).toMatchObject({ code: 'API_UNAVAILABLE' });
    await expect(wire.putCte({ deliveryId: 'd', xml: '<x/>' })).resolves.toBeUndefined();
  });
  it('an unreadable error body is classed by status and kept, truncated to 2 KB', async () => {
    reply = { status: 502, body: `<html>${'x'.repeat(10_000)}</html>` };
    const error = await failure(wire.getOrder('o'));
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE', status: 502 });
    expect(Buffer.byteLength(error.body ?? '')).toBeLessThanOrEqual(2048);
    expect(error.body?.startsWith('<html>xxx')).toBe(true);
  });
});
