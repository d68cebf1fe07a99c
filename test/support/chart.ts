/**
 * The Helm chart (deploy/helm/carrier-sync) rendered by a real helm, and each rendered object
 * checked against the Kubernetes schemas that kubernetes-models ships (types, required fields,
 * enums, formats; it does not flag unknown fields, so the chart tests assert the fields that
 * matter by their exact names).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { parseAllDocuments } from 'yaml';
import { helmBinary } from './helm.js';

const run = promisify(execFile);

export const CHART_DIR = fileURLToPath(new URL('../../deploy/helm/carrier-sync', import.meta.url));
export const EXAMPLES = ['one-replica', 'several-rwx', 'sentinel-tls', 'cluster'] as const;
export type Example = (typeof EXAMPLES)[number];

/** A rendered object, loosely typed: the tests read it as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- read as data, checked by the schemas
  data?: Record<string, string>;
  automountServiceAccountToken?: boolean;
}

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

/** The schema for each kind the chart renders; a kind missing here fails the test. */
const MODELS: Record<string, ModelClass> = {
  'apps/v1/Deployment': Deployment as unknown as ModelClass,
  'v1/Service': Service as unknown as ModelClass,
  'v1/ServiceAccount': ServiceAccount as unknown as ModelClass,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim as unknown as ModelClass,
  'v1/ConfigMap': ConfigMap as unknown as ModelClass,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as unknown as ModelClass,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor as unknown as ModelClass,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule as unknown as ModelClass,
};

/** Throws with the schema's words when `object` does not validate, or when its kind has no schema here. */
export function validateObject(object: K8sObject): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (Model === undefined) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object as never).validate();
}

export interface HelmRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function helm(args: readonly string[]): Promise<HelmRun> {
  const binary = await helmBinary();
  try {
    const { stdout, stderr } = await run(binary, [...args], { maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

export const exampleFile = (example: Example): string => join(CHART_DIR, 'examples', `${example}.yaml`);

/** `helm template` of the chart with the example's values and `--set` overrides; its objects, or throws. */
export async function render(example: Example, sets: readonly string[] = []): Promise<K8sObject[]> {
  const result = await renderRaw(example, sets);
  if (result.code !== 0) throw new Error(`helm template (${example}) failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((document) => document.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
}

export function renderRaw(example: Example, sets: readonly string[] = []): Promise<HelmRun> {
  return helm(['template', 'cs', CHART_DIR, '-f', exampleFile(example), ...sets.flatMap((set) => ['--set', set])]);
}
