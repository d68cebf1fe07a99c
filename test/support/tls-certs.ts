/**
 * A private CA and one server certificate (for 127.0.0.1 and localhost) made with openssl into a
 * folder of the test's own: what an operator's internal PKI hands out. The daemon trusts the CA
 * only through NODE_EXTRA_CA_CERTS, as a deployment would.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCerts {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** redis-server arguments that turn TLS on (no plain port) with these files. */
  serverArgs(tlsPort: number): string[];
}

export async function makeTestCerts(dir: string): Promise<TestCerts> {
  const caKey = join(dir, 'ca.key');
  const caFile = join(dir, 'ca.crt');
  const keyFile = join(dir, 'redis.key');
  const csr = join(dir, 'redis.csr');
  const certFile = join(dir, 'redis.crt');
  const ext = join(dir, 'san.ext');
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', caKey, '-out', caFile, '-days', '2', '-subj', '/CN=carrier-sync test CA']);
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', csr, '-subj', '/CN=localhost']);
  await writeFile(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', caFile, '-CAkey', caKey, '-CAcreateserial', '-out', certFile, '-days', '2', '-extfile', ext]);
  return {
    caFile,
    certFile,
    keyFile,
    serverArgs: (tlsPort) => [
      '--port',
      '0',
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      certFile,
      '--tls-key-file',
      keyFile,
      '--tls-ca-cert-file',
      caFile,
      // Clients show no certificate of their own (the ACL user's password authenticates them);
      // replication and the cluster bus speak TLS too.
      '--tls-auth-clients',
      'no',
      '--tls-replication',
      'yes',
    ],
  };
}
