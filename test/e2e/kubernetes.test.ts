/**
 * No Kubernetes runs here, so this checks deploy/kubernetes/ the way the cluster would: every
 * manifest against the official schemas (kubernetes-models' validators) and, through the same
 * package's TypeScript types, for fields Kubernetes does not know (the validators let those
 * pass; kubectl's strict field validation would not). Then what no schema sees: probes, security
 * context, the Secret, selectors, the proxy's own config check. Last, the proxy container runs
 * as the pod would get it (the image's ENV, the container's env with the Downward API and the
 * Secret resolved and $(VAR) expanded, the ConfigMap as its config file) in front of
 * server-everything, standing in for the upstream Deployment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { eventually, PROXY_MAIN, ROOT, startEverythingHttp, startProxy, stopAll } from '../helpers/processes.js';
import { INIT, postWithHost, rawPost } from '../helpers/raw.js';

const DIR = `${ROOT}deploy/kubernetes/`;
/** The kinds deploy/kubernetes uses, by apiVersion/kind; anything else fails as unknown. */
const MODELS: Record<string, { new (data: any): { validate(): void } }> = Object.fromEntries(
  [Deployment, Service, ConfigMap, PodDisruptionBudget, HorizontalPodAutoscaler, NetworkPolicy].map((m) => [
    `${m.apiVersion}/${m.kind}`,
    m,
  ]),
);
const KUSTOMIZATION = 'kustomization.yaml';

interface Manifest {
  file: string;
  obj: any;
}

const files = readdirSync(DIR)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
const kustomizationText = readFileSync(DIR + KUSTOMIZATION, 'utf8');
const yamlErrors: string[] = [];
const manifests: Manifest[] = files
  .filter((f) => f !== KUSTOMIZATION)
  .flatMap((file) =>
    parseAllDocuments(readFileSync(DIR + file, 'utf8')).flatMap((doc) => {
      yamlErrors.push(...doc.errors.map((e) => `${file}: ${e.message}`));
      const obj = doc.toJS();
      return obj ? [{ file, obj }] : [];
    }),
  );

const all = (kind: string) => manifests.filter((m) => m.obj.kind === kind).map((m) => m.obj);
const one = (kind: string, name: string) => {
  const found = all(kind).filter((o) => o.metadata?.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} named ${name}, found ${found.length}`);
  return found[0];
};
const podSpec = (deployment: any) => deployment.spec.template.spec;
/** Tells the Deployment running the proxy image from the others (the example upstream). */
const isProxy = (d: any) => podSpec(d).containers.some((c: any) => /^mcp-negotiate-proxy(:|$)/.test(c.image));
const proxyDeployment = all('Deployment').find(isProxy);
const proxyContainer = podSpec(proxyDeployment).containers.find((c: any) => /^mcp-negotiate-proxy(:|$)/.test(c.image));
const configMap = one('ConfigMap', podSpec(proxyDeployment).volumes.find((v: any) => v.configMap).configMap.name);

/** Does a label selector's matchLabels (or a Service's selector) pick pods with these labels? */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** A probe's or Service's port, named or numbered, as the container's port number. */
function portNumber(container: any, port: string | number): number | undefined {
  return typeof port === 'number' ? port : container.ports?.find((p: any) => p.name === port)?.containerPort;
}

/** The image's ENV (Dockerfile), which every pod of the image starts with. */
const dockerfile = readFileSync(`${ROOT}Dockerfile`, 'utf8').replace(/\\\n\s*/g, '');
const imageEnv: Record<string, string> = Object.fromEntries(
  [...dockerfile.matchAll(/^ENV (.*)$/gm)].flatMap((m) =>
    m[1]
      .trim()
      .split(/\s+/)
      .map((kv) => kv.split('=', 2) as [string, string]),
  ),
);

/** A client token and the Secret the documented `kubectl create secret` would make for it. */
const TOKEN = randomBytes(32).toString('hex');
const SECRET_NAME = /kubectl create secret generic (\S+)/.exec(kustomizationText)?.[1];
const SECRET_KEYS = [...kustomizationText.matchAll(/--from-literal=([\w.-]+)=/g)].map((m) => m[1]);
const SECRET_VALUES: Record<string, string> = {
  'replica-secret': randomBytes(32).toString('base64'),
  'client-token-sha256': createHash('sha256').update(TOKEN).digest('hex'),
};

interface Pod {
  ip: string;
  name: string;
  namespace: string;
}

/**
 * The environment the kubelet gives a container: the image's ENV, then `env` in order, each
 * from a literal (with $(VAR) of earlier entries expanded, $$ escaping), the Downward API or a
 * Secret key.
 */
function containerEnv(container: any, pod: Pod): Record<string, string> {
  const fields: Record<string, string> = { 'status.podIP': pod.ip, 'metadata.name': pod.name, 'metadata.namespace': pod.namespace };
  const env: Record<string, string> = { ...imageEnv };
  const defined = new Set<string>();
  for (const e of container.env ?? []) {
    let value: string;
    if (e.valueFrom?.fieldRef) {
      value = fields[e.valueFrom.fieldRef.fieldPath];
      if (value === undefined) throw new Error(`${e.name}: no stand-in for field ${e.valueFrom.fieldRef.fieldPath}`);
    } else if (e.valueFrom?.secretKeyRef) {
      const { name, key } = e.valueFrom.secretKeyRef;
      if (name !== SECRET_NAME || !SECRET_KEYS.includes(key))
        throw new Error(`${e.name}: Secret ${name} key ${key} is not what kustomization.yaml tells operators to create`);
      value = SECRET_VALUES[key];
    } else if (e.valueFrom) {
      throw new Error(`${e.name}: no stand-in for ${Object.keys(e.valueFrom)}`);
    } else {
      value = String(e.value ?? '').replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name?: string) =>
        name === undefined ? '$' : defined.has(name) ? env[name] : m,
      );
    }
    env[e.name] = value;
    defined.add(e.name);
  }
  return env;
}

/**
 * TypeScript errors of `const m: IKind = <manifest>` for every manifest: excess-property checks
 * on object literals name every field the API does not have, at any depth.
 */
function unknownFields(docs: Manifest[]): string[] {
  const file = `${ROOT}test/e2e/kubernetes-manifests.generated.ts`; // never written: served from memory
  const lines = docs.map((d, i) => `import type { I${d.obj.kind} as T${i} } from 'kubernetes-models/${d.obj.apiVersion}/${d.obj.kind}';`);
  const first = lines.length;
  lines.push(...docs.map((d, i) => `export const m${i}: T${i} = ${JSON.stringify(d.obj)};`));
  const text = lines.join('\n');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) =>
    name === file ? ts.createSourceFile(name, text, lang) : getSourceFile.call(host, name, lang, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const doc = docs[line - first];
    const where = doc
      ? `${doc.file}: ${doc.obj.kind} ${doc.obj.metadata?.name}`
      : line >= 0
        ? `${docs[line]?.file}: ${docs[line]?.obj.apiVersion} ${docs[line]?.obj.kind}`
        : 'manifests';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

/** Where the pod finds its config file, and the ConfigMap's copy of it written to a temp dir. */
const CONFIG_MOUNTED_AT: string = proxyContainer.env.find((e: any) => e.name === 'MCP_PROXY_CONFIG').value;
const configDir = mkdtempSync(join(tmpdir(), 'k8s-config-'));
const CONFIG_FILE = join(configDir, basename(CONFIG_MOUNTED_AT));
writeFileSync(CONFIG_FILE, configMap.data[basename(CONFIG_MOUNTED_AT)] ?? '');
afterAll(() => rmSync(configDir, { recursive: true, force: true }));

/** A GET's status with an arbitrary Host header (fetch forbids setting it). */
function getWithHost(url: URL, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

describe('deploy/kubernetes manifests', () => {
  it('parse, and kustomization.yaml lists every manifest and the proxy image', () => {
    expect(yamlErrors).toEqual([]);
    const kustomization = parse(kustomizationText);
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => f !== KUSTOMIZATION));
    expect(kustomization.images.map((i: any) => i.name)).toEqual([proxyContainer.image.split(':')[0]]);
    // Never a Secret in the repository: kustomization.yaml says how to create it.
    expect(all('Secret')).toEqual([]);
  });

  it('validate against the Kubernetes schemas, with no field Kubernetes does not know', () => {
    const problems: string[] = [];
    for (const { file, obj } of manifests) {
      const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
      if (!Model) {
        problems.push(`${file}: no schema for ${obj.apiVersion} ${obj.kind}`);
        continue;
      }
      try {
        new Model(obj).validate();
      } catch (err) {
        problems.push(`${file}: ${obj.kind} ${obj.metadata?.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
    expect(unknownFields(manifests)).toEqual([]);
    expect(new Set(manifests.map((m) => m.obj.kind))).toEqual(
      new Set(['ConfigMap', 'Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'NetworkPolicy']),
    );
  });

  it('probe the proxy on /healthz and /readyz at the port it listens on', () => {
    const port = Number(imageEnv.MCP_PROXY_PORT);
    expect(portNumber(proxyContainer, 'http')).toBe(port);
    expect(parse(configMap.data['config.yaml']).listen.port).toBe(port);
    const probes = { livenessProbe: '/healthz', readinessProbe: '/readyz', startupProbe: '/healthz' };
    for (const [probe, path] of Object.entries(probes)) {
      expect(proxyContainer[probe]?.httpGet?.path, probe).toBe(path);
      expect(portNumber(proxyContainer, proxyContainer[probe].httpGet.port), probe).toBe(port);
    }
    // The replica URL other replicas forward to is this pod at that port.
    expect(proxyContainer.env.find((e: any) => e.name === 'MCP_PROXY_REPLICA_URL').value).toBe(`http://$(POD_IP):${port}/mcp`);
  });

  it('run every container non-root, read-only, unprivileged, with requests and limits', () => {
    for (const d of all('Deployment')) {
      const pod = podSpec(d);
      expect(pod.automountServiceAccountToken, d.metadata.name).toBe(false);
      expect(pod.enableServiceLinks, d.metadata.name).toBe(false);
      for (const c of pod.containers) {
        const sc = { ...pod.securityContext, ...c.securityContext };
        const what = `${d.metadata.name}/${c.name}`;
        expect(sc.runAsNonRoot, what).toBe(true);
        expect(sc.runAsUser, what).toBe(1000); // the node images' "node" user
        expect(sc.readOnlyRootFilesystem, what).toBe(true);
        expect(sc.allowPrivilegeEscalation, what).toBe(false);
        expect(sc.capabilities?.drop, what).toContain('ALL');
        expect(sc.capabilities?.add ?? [], what).toEqual([]);
        expect(sc.seccompProfile?.type, what).toBe('RuntimeDefault');
        for (const kind of ['requests', 'limits'])
          for (const r of ['cpu', 'memory']) expect(c.resources?.[kind]?.[r], `${what} ${kind}.${r}`).toBeDefined();
      }
    }
    // The proxy writes nothing: no writable volume.
    expect(podSpec(proxyDeployment).volumes.filter((v: any) => !v.configMap)).toEqual([]);
    expect(proxyContainer.volumeMounts.every((m: any) => m.readOnly)).toBe(true);
  });

  it('take secrets from the Secret that kustomization.yaml tells operators to create, and require authentication', () => {
    expect(SECRET_NAME).toBeDefined();
    const env: any[] = proxyContainer.env;
    const secret = env.find((e) => e.name === 'MCP_PROXY_SECRET');
    expect(secret.value).toBeUndefined();
    expect(secret.valueFrom.secretKeyRef).toEqual({ name: SECRET_NAME, key: 'replica-secret' });
    // Anything named like a secret comes from the Secret, never from the manifest.
    for (const e of env.filter((e) => /SECRET|TOKEN|PASSWORD|KEY/i.test(e.name))) expect(e.valueFrom?.secretKeyRef, e.name).toBeDefined();
    const refs = env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef);
    expect(refs.every((r) => r.name === SECRET_NAME)).toBe(true);
    expect(refs.map((r) => r.key).sort()).toEqual([...SECRET_KEYS].sort());
    // Bound to the pod network: authentication on, no opt-out.
    const config = parse(configMap.data['config.yaml']);
    expect(config.auth.tokens.length).toBeGreaterThan(0);
    expect(config.auth.allowUnauthenticated).toBeUndefined();
    expect(env.map((e) => e.name)).not.toContain('MCP_PROXY_ALLOW_UNAUTHENTICATED');
    expect(proxyContainer.args).toBeUndefined();
  });

  it('mount the ConfigMap where MCP_PROXY_CONFIG points', () => {
    const mount = proxyContainer.volumeMounts.find((m: any) => m.mountPath === dirname(CONFIG_MOUNTED_AT));
    const volume = podSpec(proxyDeployment).volumes.find((v: any) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe(configMap.metadata.name);
    expect(Object.keys(configMap.data)).toContain(basename(CONFIG_MOUNTED_AT));
  });

  it('select the right pods: Services, budget, autoscaler and network policy', () => {
    const proxyLabels = proxyDeployment.spec.template.metadata.labels;
    expect(selects(proxyDeployment.spec.selector.matchLabels, proxyLabels)).toBe(true);
    const upstreams = all('Deployment').filter((d) => !isProxy(d));
    const upstreamUrl = new URL(proxyContainer.env.find((e: any) => e.name === 'UPSTREAM_URL').value);

    const service = one('Service', 'mcp-negotiate-proxy');
    expect(service.spec.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(selects(service.spec.selector, proxyLabels)).toBe(true);
    expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'http', port: 8080, targetPort: 'http' })]);
    expect(portNumber(proxyContainer, service.spec.ports[0].targetPort)).toBe(8080);
    for (const u of upstreams) expect(selects(service.spec.selector, u.spec.template.metadata.labels)).toBe(false);

    // The Service names clients use are accepted as Host (DNS-rebinding protection).
    const hosts: string[] = parse(configMap.data['config.yaml']).listen.allowedHosts;
    expect(hosts).toContain(service.metadata.name);
    expect(hosts).toContain(`${service.metadata.name}.\${POD_NAMESPACE}.svc.cluster.local`);

    // UPSTREAM_URL names the upstream's Service, which selects the upstream pods only.
    const upstreamService = one('Service', upstreamUrl.hostname);
    const upstream = upstreams.find((u) => selects(upstreamService.spec.selector, u.spec.template.metadata.labels));
    expect(upstream).toBeDefined();
    expect(selects(upstreamService.spec.selector, proxyLabels)).toBe(false);
    const servicePort = upstreamService.spec.ports.find((p: any) => p.port === Number(upstreamUrl.port));
    expect(servicePort, `a port ${upstreamUrl.port} on Service ${upstreamService.metadata.name}`).toBeDefined();
    expect(portNumber(podSpec(upstream).containers[0], servicePort.targetPort)).toBeDefined();
    const policy = one('NetworkPolicy', upstream.metadata.name);
    expect(selects(policy.spec.podSelector.matchLabels, upstream.spec.template.metadata.labels)).toBe(true);
    expect(policy.spec.ingress.flatMap((r: any) => r.from.map((f: any) => selects(f.podSelector?.matchLabels, proxyLabels)))).toEqual([
      true,
    ]);

    const pdb = one('PodDisruptionBudget', proxyDeployment.metadata.name);
    expect(selects(pdb.spec.selector.matchLabels, proxyLabels)).toBe(true);
    expect(pdb.spec.maxUnavailable ?? proxyDeployment.spec.replicas - pdb.spec.minAvailable).toBe(1);

    const hpa = one('HorizontalPodAutoscaler', proxyDeployment.metadata.name);
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: proxyDeployment.metadata.name });
    expect(proxyDeployment.spec.replicas).toBe(3);
    expect(hpa.spec.minReplicas).toBe(proxyDeployment.spec.replicas);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics).toEqual([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } } },
    ]);
  });
});

describe('the proxy container, run as the pod would get it', () => {
  afterAll(stopAll);
  const pod: Pod = { ip: '127.0.0.1', name: 'mcp-negotiate-proxy-5d8f7c9b6-x2k4q', namespace: 'mcp' };

  it("passes the proxy's own config check", async () => {
    const env = { ...containerEnv(proxyContainer, pod), MCP_PROXY_CONFIG: CONFIG_FILE };
    const { stdout } = await promisify(execFile)(process.execPath, [PROXY_MAIN, 'validate', '--config', CONFIG_FILE], {
      env: { ...process.env, ...env },
    });
    expect(stdout).toMatch(/: OK \(/);
  });

  it('is ready, serves MCP to a client with the token, refuses one without, and drains on SIGTERM', async () => {
    const everything = await startEverythingHttp();
    const podEnv = containerEnv(proxyContainer, pod);
    expect(podEnv.MCP_PROXY_REPLICA_ID).toBe(pod.name);
    expect(podEnv.MCP_PROXY_REPLICA_URL).toBe('http://127.0.0.1:8080/mcp');
    const env = {
      ...podEnv,
      MCP_PROXY_CONFIG: CONFIG_FILE, // where the ConfigMap is mounted
      UPSTREAM_URL: everything.url, // in place of the upstream Service
      MCP_PROXY_HOST: '127.0.0.1', // the pod's own network namespace binds 0.0.0.0
    };
    const proxy = await startProxy(proxyContainer.args ?? [], env); // startProxy runs dist/main.js, the image's ENTRYPOINT
    const base = new URL(proxy.url);

    // The kubelet's probes, as the Deployment defines them: Host is the pod IP and port.
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const { path } = proxyContainer[probe].httpGet;
      await eventually(
        async () => (await getWithHost(new URL(path, base), '10.244.1.7:8080')) === 200,
        15_000,
        `${probe} ${path} answers 200`,
      );
    }

    // The Service's in-cluster name passes the Host check and meets authentication; other names do not.
    expect(await postWithHost(proxy.url, `mcp-negotiate-proxy.${pod.namespace}.svc.cluster.local:8080`, INIT)).toBe(401);
    expect(await postWithHost(proxy.url, 'attacker.example:8080', INIT)).toBe(403);
    expect((await rawPost(proxy.url, INIT)).status).toBe(401);
    expect((await rawPost(proxy.url, INIT, { authorization: 'Bearer not-the-token' })).status).toBe(401);

    const client = new Client({ name: 'kubernetes-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    await client.close();

    // What the kubelet sends after preStop: the proxy drains and exits cleanly.
    expect(await proxy.stop('SIGTERM')).toBe(0);
  });
});

/**
 * deploy/kubernetes-several-servers: an overlay of the base with strategic-merge patches. What
 * kustomize makes of it, for the fields its patches use: maps merged key by key, lists of
 * objects merged by `name` (`mountPath` for volume mounts), new items first, anything else
 * replaced. (For these manifests, the same output as `kubectl kustomize` 5.5.)
 */
const OVERLAY = `${ROOT}deploy/kubernetes-several-servers/`;

function strategicMerge(base: any, patch: any, key?: string): any {
  if (Array.isArray(patch)) {
    if (!Array.isArray(base) || !patch.every((p) => p && typeof p === 'object')) return patch;
    const by = key === 'volumeMounts' ? 'mountPath' : 'name';
    const merged = base.map((item) => {
      const change = patch.find((p) => p[by] === item[by]);
      return change ? strategicMerge(item, change) : item;
    });
    return [...patch.filter((p) => !base.some((item) => item[by] === p[by])), ...merged];
  }
  if (patch && typeof patch === 'object' && base && typeof base === 'object') {
    const out = { ...base };
    for (const [k, v] of Object.entries(patch)) out[k] = strategicMerge(base[k], v, k);
    return out;
  }
  return patch;
}

const overlayKustomization = parse(readFileSync(`${OVERLAY}kustomization.yaml`, 'utf8'));
const overlayPatches: any[] = overlayKustomization.patches.map((p: { path: string }) => parse(readFileSync(OVERLAY + p.path, 'utf8')));
const overlaid: Manifest[] = manifests.map(({ file, obj }) => {
  const patches = overlayPatches.filter((p) => p.kind === obj.kind && p.metadata.name === obj.metadata?.name);
  return { file, obj: patches.reduce((o, p) => strategicMerge(o, p), obj) };
});
const severalDeployment = overlaid.map((m) => m.obj).find((o) => o.kind === 'Deployment' && isProxy(o));
const severalPod = podSpec(severalDeployment);
const severalProxy = severalPod.containers.find((c: any) => c.name === proxyContainer.name);
const severalConfigMap = overlaid.find((m) => m.obj.kind === 'ConfigMap' && m.obj.metadata.name === configMap.metadata.name)!.obj;

describe('deploy/kubernetes-several-servers overlay', () => {
  afterAll(stopAll);
  const pod: Pod = { ip: '127.0.0.1', name: 'mcp-negotiate-proxy-7c9d8b5f4-q8w2e', namespace: 'mcp' };

  it('builds on the base and patches only what exists there, validating as the base does', () => {
    expect(overlayKustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    expect(overlayKustomization.resources.map((r: string) => resolve(OVERLAY, r))).toEqual([resolve(DIR)]);
    for (const patch of overlayPatches)
      expect(
        manifests.some((m) => m.obj.kind === patch.kind && m.obj.metadata?.name === patch.metadata.name),
        patch.metadata.name,
      ).toBe(true);
    const problems: string[] = [];
    for (const { file, obj } of overlaid) {
      try {
        new MODELS[`${obj.apiVersion}/${obj.kind}`](obj).validate();
      } catch (err) {
        problems.push(`${file}: ${obj.kind} ${obj.metadata?.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
    expect(unknownFields(overlaid)).toEqual([]);
    // The base is unchanged: the overlay is applied in place of it, not on top.
    expect(podSpec(proxyDeployment).initContainers).toBeUndefined();
  });

  it('installs the servers this repository tests with, non-root and read-only, into a volume the proxy reads', () => {
    const [install] = severalPod.initContainers;
    expect(severalPod.initContainers.map((c: any) => c.name)).toEqual(['install-servers']);
    for (const c of [install, severalProxy]) {
      const sc = { ...severalPod.securityContext, ...c.securityContext };
      expect(sc, c.name).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
      });
      expect(sc.capabilities.drop, c.name).toContain('ALL');
      for (const kind of ['requests', 'limits'])
        for (const r of ['cpu', 'memory']) expect(c.resources?.[kind]?.[r], `${c.name} ${kind}.${r}`).toBeDefined();
    }
    const pinned = Object.fromEntries(
      (install.command as string[])
        .filter((w) => /^@[^@]+@\d/.test(w))
        .map((w) => [w.slice(0, w.lastIndexOf('@')), w.slice(w.lastIndexOf('@') + 1)]),
    );
    expect(Object.keys(pinned).sort()).toEqual(['@modelcontextprotocol/server-filesystem', '@modelcontextprotocol/server-memory']);
    for (const [name, version] of Object.entries(pinned))
      expect(JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, 'utf8')).version, name).toBe(version);
    const prefix = (install.command as string[]).find((w) => w.startsWith('--prefix='))!.slice('--prefix='.length);
    const written = install.volumeMounts.find((m: any) => m.mountPath === prefix);
    const read = severalProxy.volumeMounts.find((m: any) => m.name === written.name);
    expect(read).toMatchObject({ mountPath: prefix, readOnly: true });
    expect(severalProxy.env.find((e: any) => e.name === 'MCP_SERVERS').value).toBe(`${prefix}/node_modules`);
    // The proxy's one writable volume holds the stdio servers' data.
    const writable = severalProxy.volumeMounts.filter((m: any) => !m.readOnly).map((m: any) => m.mountPath);
    expect(writable).toEqual(['/data']);
    for (const name of ['MEMORY_FILE_PATH', 'FILES_ROOT'])
      expect(severalProxy.env.find((e: any) => e.name === name).value.startsWith('/data'), name).toBe(true);
  });

  it('serves every server behind one endpoint as the pod would get it: probes, per-server health, prefixed tools', async () => {
    const configDir = mkdtempSync(join(tmpdir(), 'k8s-several-'));
    const data = join(configDir, 'data'); // the pod's /data emptyDir
    try {
      const config = join(configDir, basename(CONFIG_MOUNTED_AT));
      writeFileSync(config, severalConfigMap.data[basename(CONFIG_MOUNTED_AT)]);
      const podEnv = containerEnv(severalProxy, pod);
      const { stdout } = await promisify(execFile)(process.execPath, [PROXY_MAIN, 'validate', '--config', config], {
        env: { ...process.env, ...podEnv },
      });
      expect(stdout).toMatch(/: OK \(/);

      const everything = await startEverythingHttp();
      mkdirSync(data);
      const env = {
        ...podEnv,
        MCP_PROXY_CONFIG: config,
        UPSTREAM_URL: everything.url, // in place of the upstream Service
        MCP_SERVERS: `${ROOT}node_modules`, // the volume the init container fills, with the same releases
        MEMORY_FILE_PATH: podEnv.MEMORY_FILE_PATH.replace(/^\/data/, data),
        FILES_ROOT: podEnv.FILES_ROOT.replace(/^\/data/, data),
        MCP_PROXY_HOST: '127.0.0.1',
      };
      const proxy = await startProxy(severalProxy.args ?? [], env);
      const base = new URL(proxy.url);
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        const { path } = severalProxy[probe].httpGet;
        await eventually(
          async () => (await getWithHost(new URL(path, base), '10.244.1.7:8080')) === 200,
          30_000,
          `${probe} ${path} answers 200`,
        );
      }
      const health = await (await fetch(new URL('/healthz', base))).json();
      expect(health.upstream.servers.map((s: any) => [s.name, s.status, s.required])).toEqual([
        ['everything', 'up', true],
        ['memory', 'up', true],
        ['files', 'up', false],
      ]);

      const client = new Client({ name: 'kubernetes-several-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(proxy.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
      );
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['everything_echo', 'memory_create_entities', 'files_list_directory']));
      await client.callTool({
        name: 'memory_create_entities',
        arguments: { entities: [{ name: 'proxy', entityType: 'service', observations: ['fronts several servers'] }] },
      });
      // server-memory wrote its graph where the pod keeps its data; server-filesystem serves that folder.
      expect(existsSync(env.MEMORY_FILE_PATH)).toBe(true);
      const listing = await client.callTool({ name: 'files_list_directory', arguments: { path: env.FILES_ROOT } });
      expect(JSON.stringify(listing.content)).toContain(basename(env.MEMORY_FILE_PATH));
      await client.close();
      expect(await proxy.stop('SIGTERM')).toBe(0);
    } finally {
      rmSync(configDir, { recursive: true, force: true });
    }
  });
});
