// A real TLS-terminating gRPC proxy (Debian's nginx) in front of the plain dev server, requiring a
// client certificate: certificates made with the openssl CLI at test time, nginx tracked by PID.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runToEnd, startTracked, stopPid, waitFor } from '../../tools/processes';
import { temporalAddress } from './temporal';

export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const out = await runToEnd('openssl', args, { env: { PATH: process.env.PATH, HOME: dir } });
  if (out.exitCode !== 0) throw new Error(`openssl ${args.join(' ')}: ${out.stderr}`);
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A leaf certificate signed by the CA, with its extensions (v3: rustls and Node both check them). */
async function leaf(dir: string, name: string, extensions: string[]): Promise<void> {
  const file = (suffix: string) => join(dir, `${name}.${suffix}`);
  writeFileSync(file('ext'), `${extensions.join('\n')}\n`);
  const request = ['-keyout', file('key'), '-out', file('csr'), '-subj', `/CN=${name}`];
  await openssl(dir, ['req', '-new', ...P256, ...request]);
  const ca = ['-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'), '-CAcreateserial'];
  const out = ['-days', '1', '-out', file('pem'), '-extfile', file('ext')];
  await openssl(dir, ['x509', '-req', '-in', file('csr'), ...ca, ...out]);
}

/** A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate. */
export async function makeCertificates(dir: string): Promise<TlsFiles> {
  const ca = ['-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.pem'), '-subj', '/CN=netlease-test-ca'];
  await openssl(dir, ['req', '-x509', ...P256, ...ca, '-days', '1']);
  const common = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature'];
  await leaf(dir, 'server', [
    ...common,
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]);
  await leaf(dir, 'client', [...common, 'extendedKeyUsage=clientAuth']);
  return {
    ca: join(dir, 'ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
  };
}

/** nginx 1.22 (Debian 12) spells HTTP/2 on the listen line; long polls last about 70 s. */
function nginxConf(dir: string, port: number, upstream: string, files: TlsFiles): string {
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((kind) => `  ${kind}_temp_path ${join(dir, kind)};`)
    .join('\n');
  return `worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 256; }
http {
  access_log ${join(dir, 'access.log')};
${temp}
  server {
    listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${files.serverCert};
    ssl_certificate_key ${files.serverKey};
    ssl_client_certificate ${files.ca};
    ssl_verify_client on;
    location / {
      grpc_pass grpc://${upstream};
      grpc_read_timeout 300s;
      grpc_send_timeout 300s;
    }
  }
}
`;
}

/** Debian installs nginx in /usr/sbin, which a non-root PATH may lack (tools/bootstrap.sh installs it). */
export function nginxPath(): string {
  const found = [...(process.env.PATH ?? '').split(':'), '/usr/sbin']
    .map((d) => join(d, 'nginx'))
    .find((p) => existsSync(p));
  if (!found) throw new Error('nginx is not installed: run tools/bootstrap.sh as root');
  return found;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface TlsProxy {
  address: string;
  files: TlsFiles;
  dir: string;
  stop(): Promise<void>;
}

/** Certificates and nginx in a fresh temp dir; `stop` ends nginx by PID and removes the dir. */
export async function startTlsProxy(upstream: string): Promise<TlsProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-mtls-'));
  const files = await makeCertificates(dir);
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConf(dir, port, upstream, files));
  const nginx = startTracked(nginxPath(), [
    '-p',
    dir,
    '-e',
    join(dir, 'error.log'),
    '-c',
    conf,
    '-g',
    'daemon off;',
  ]);
  let exited = false;
  void nginx.exited.then(() => (exited = true));
  const stop = async () => {
    await stopPid(nginx.pid);
    rmSync(dir, { recursive: true, force: true });
  };
  if (!(await waitFor(async () => exited || (await accepts(port)), 15_000)) || exited) {
    await stop();
    throw new Error(`nginx did not listen on 127.0.0.1:${port}`);
  }
  return { address: `127.0.0.1:${port}`, files, dir, stop };
}

/** One proxy to the test run's dev server for the whole file; `proxy` is set before tests run. */
export function withTlsProxy(): { readonly proxy: TlsProxy } {
  let proxy: TlsProxy | undefined;
  beforeAll(async () => {
    proxy = await startTlsProxy(temporalAddress());
  });
  afterAll(async () => {
    await proxy?.stop();
  });
  return {
    get proxy() {
      if (!proxy) throw new Error('withTlsProxy: used before beforeAll ran');
      return proxy;
    },
  };
}
