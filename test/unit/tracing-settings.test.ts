/**
 * When tracing is on (docs/tracing.md): an OTLP endpoint set, the SDK not disabled, the exporter
 * not `none`; and CARRIER_SYNC_TRACE_URL, a link template that must hold {traceId}.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { traceLinkOf } from '../../src/journey/step-text.js';
import { isTracingOn } from '../../src/runtime/tracing.js';

describe('tracing settings', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
  ])('%j: on is %s', (env, isOn) => {
    expect(isTracingOn(env)).toBe(isOn);
  });

  it('CARRIER_SYNC_TRACE_URL must be an http(s) URL holding {traceId}; the link replaces every {traceId}', () => {
    expect(loadConfig({ env: {} }).history.traceUrl).toBeNull();
    const template = 'https://grafana.example/explore?traceId={traceId}&x={traceId}';
    expect(loadConfig({ env: { CARRIER_SYNC_TRACE_URL: template } }).history.traceUrl).toBe(template);
    expect(() => loadConfig({ env: { CARRIER_SYNC_TRACE_URL: 'https://tempo.example/trace/' } })).toThrowError(
      /history\.traceUrl \[CARRIER_SYNC_TRACE_URL\].*\{traceId\}/,
    );
    expect(() => loadConfig({ env: { CARRIER_SYNC_TRACE_URL: 'javascript:alert({traceId})' } })).toThrowError(/CARRIER_SYNC_TRACE_URL/);
    const id = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceLinkOf(id, template)).toBe(`https://grafana.example/explore?traceId=${id}&x=${id}`);
    expect(traceLinkOf(id, null)).toBe(id);
  });
});
