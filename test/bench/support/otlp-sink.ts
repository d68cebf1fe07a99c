/**
 * BENCH_TRACING=1: every spawned daemon traces (every item sampled; with BENCH_TRACING_RATIO=0.1,
 * one in ten) to this sink, an OTLP/HTTP endpoint on loopback in the bench process that takes any export (protobuf, the default protocol,
 * or JSON) and keeps nothing: the daemon pays for its spans, the sink costs it nothing.
 * Run it with --compare against a build before tracing for "tracing on" against "no tracing".
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

let sink: Promise<{ url: string; server: Server }> | undefined;

export function isBenchTracing(): boolean {
  return process.env['BENCH_TRACING'] === '1';
}

/** The environment that turns a daemon's tracing on, towards the sink (started on first use). */
export async function tracingEnv(): Promise<Record<string, string>> {
  sink ??= new Promise((resolve) => {
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': String(request.headers['content-type'] ?? 'application/x-protobuf') }).end();
      });
    });
    server.listen(0, '127.0.0.1', () => {
      server.unref();
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server });
    });
  });
  const { url } = await sink;
  // BENCH_TRACING_RATIO=0.1: one item in ten sampled (parentbased_traceidratio), as docs/tracing.md suggests.
  const ratio = process.env['BENCH_TRACING_RATIO'];
  const sampler: Record<string, string> =
    ratio === undefined ? { OTEL_TRACES_SAMPLER: 'always_on' } : { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio };
  // Any other OTEL_* setting of the bench's own environment goes to the daemons too (OTEL_BSP_*, the protocol…).
  const others = Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined),
  );
  return { ...others, OTEL_EXPORTER_OTLP_ENDPOINT: url, ...sampler };
}
