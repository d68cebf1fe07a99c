import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { ErrorShape } from './endpoints.js';

/**
 * The five error bodies of api-contract.md §7:
 *   A { code, message, level, status:int, params? }   carrier endpoints 4.1-4.4
 *   B { code, message, status:int }                   4.7
 *   C { message, code, status:string }                4.5, 4.6
 *   D { status_code, timestamp, message, code, error_id, params }  4.8
 *   E { message }                                     401, 429, 503 and anything outside the API
 */

export type Params = Record<string, unknown>;

export function shapeA(status: number, code: string, message: string, params?: Params): object {
  return params === undefined ? { code, message, level: 'WARNING', status } : { code, message, level: 'WARNING', status, params };
}

export function shapeB(status: number, code: string, message: string): object {
  return { code, message, status };
}

/** Shape C carries the status as text, e.g. NOT_FOUND. */
export function shapeC(status: number, code: string, message: string): object {
  return { message, code, status: statusText(status) };
}

export function shapeD(status: number, code: string, message: string, params: Params = {}): object {
  return { status_code: status, timestamp: new Date().toISOString(), message, code, error_id: randomUUID(), params };
}

export function shapeE(message: string): { message: string } {
  return { message };
}

export function errorBody(shape: ErrorShape, status: number, code: string, message: string, params?: Params): object {
  switch (shape) {
    case 'A':
      return shapeA(status, code, message, params);
    case 'B':
      return shapeB(status, code, message);
    case 'C':
      return shapeC(status, code, message);
    case 'D':
      return shapeD(status, code, message, params);
  }
}

/** Sends an error in the endpoint's shape; returns the reply so handlers can `return fail(...)`. */
export function fail(reply: FastifyReply, shape: ErrorShape, status: number, code: string, message: string, params?: Params): FastifyReply {
  return reply.code(status).send(errorBody(shape, status, code, message, params));
}

function statusText(status: number): string {
  return (STATUS_CODES[status] ?? 'ERROR').toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}
