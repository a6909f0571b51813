/**
 * The runtime contract: the same cases run on Bun (contract.test.ts) and Deno
 * (contract.deno.ts). Each case throws (node:assert) on failure.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FetchHandler, serveHttp } from "../../src/runtime/http.ts";
import type { Runtime } from "../../src/runtime/types.ts";

export interface ContractCase {
  name: string;
  run(rt: Runtime): Promise<void>;
}

/** A raw HTTP/1.1 request over TCP or a unix socket, as interLink's Go client sends it. */
export function rawRequest(
  target: { port: number } | { socketPath: string },
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...("port" in target ? { host: "127.0.0.1", port: target.port } : { socketPath: target.socketPath }),
        method,
        path,
        headers: {
          "content-type": "application/json",
          "InterLink-Http-Session": "GetStatus#1",
          ...(body !== undefined ? { "content-length": Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const echo: FetchHandler = (req, extras) =>
  new Response(
    JSON.stringify({
      method: req.method,
      path: new URL(req.url).pathname,
      body: new TextDecoder().decode(extras.rawBody),
      session: req.headers.get("interlink-http-session"),
    }),
    {
      headers: { "content-type": "application/json" },
    },
  );

/** PEM text of a CA, a server certificate for 127.0.0.1 and client certificates, made by openssl in a fresh folder. */
interface TestPki {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Signed by another CA: a server requiring the first CA refuses it. */
  strangerCert: string;
  strangerKey: string;
  /** X.509 v1 (no extensions), signed by the CA. */
  v1Cert: string;
}

async function makePki(rt: Runtime, dir: string): Promise<TestPki> {
  const openssl = async (...args: string[]) => {
    const r = await rt.spawn({ argv: ["openssl", ...args], env: { PATH: "/usr/bin:/bin" }, cwd: dir, timeoutMs: 30_000 });
    assert.equal(r.code, 0, `openssl ${args[0]}: ${r.stderr}`);
  };
  const key = (name: string) => openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`);
  writeFileSync(join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  writeFileSync(join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  for (const ca of ["ca", "other-ca"]) {
    await key(ca);
    await openssl("req", "-x509", "-new", "-key", `${ca}.key`, "-out", `${ca}.pem`, "-days", "1", "-subj", `/CN=${ca}`);
  }
  const sign = async (name: string, subj: string, ca: string, ext?: string) => {
    await key(name);
    await openssl("req", "-new", "-key", `${name}.key`, "-out", `${name}.csr`, "-subj", subj);
    await openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${ca}.pem`,
      "-CAkey",
      `${ca}.key`,
      "-CAcreateserial",
      "-out",
      `${name}.pem`,
      "-days",
      "1",
      ...(ext ? ["-extfile", ext] : []),
    );
  };
  await sign("server", "/CN=127.0.0.1", "ca", "server.ext");
  await sign("client", "/CN=alice/O=team", "ca", "client.ext");
  await sign("stranger", "/CN=mallory", "other-ca", "client.ext");
  await sign("v1", "/CN=old", "ca");
  const r = (f: string) => readFileSync(join(dir, f), "utf8");
  return {
    ca: r("ca.pem"),
    serverCert: r("server.pem"),
    serverKey: r("server.key"),
    clientCert: r("client.pem"),
    clientKey: r("client.key"),
    strangerCert: r("stranger.pem"),
    strangerKey: r("stranger.key"),
    v1Cert: r("v1.pem"),
  };
}

/** An HTTPS server on 127.0.0.1 that demands a client certificate of the given CA, as kube-apiserver does with --client-ca-file. */
function mtlsServer(pki: TestPki, handler: (path: string, res: import("node:http").ServerResponse) => void): Promise<{ url: string; server: HttpsServer }> {
  const server = createHttpsServer(
    { key: pki.serverKey, cert: pki.serverCert, ca: pki.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => handler(req.url ?? "", res),
  );
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, server })));
}

const TRICKY = `a b 'single' "double" $(touch /nonexistent) \`x\` \\ é\nsecond line`;

export const contractCases: ContractCase[] = [
  {
    name: "spawn: an argv element with spaces and quotes arrives unsplit",
    async run(rt) {
      const r = await rt.spawn({ argv: ["/usr/bin/printf", "[%s]", TRICKY, "two"] });
      assert.equal(r.code, 0);
      assert.equal(r.stdout, `[${TRICKY}][two]`);
    },
  },
  {
    name: "spawn: the child gets exactly the environment given",
    async run(rt) {
      const r = await rt.spawn({ argv: ["/usr/bin/env"], env: { ONLY: "this value", TRICKY } });
      assert.equal(r.stdout, `ONLY=this value\nTRICKY=${TRICKY}\n`);
    },
  },
  {
    name: "spawn: cwd, stdin, exit code and stderr are captured",
    async run(rt) {
      const r = await rt.spawn({ argv: ["/bin/sh", "-c", "pwd; cat; echo oops >&2; exit 3"], cwd: "/tmp", stdin: "from stdin\n" });
      assert.equal(r.code, 3);
      assert.equal(r.stdout, "/tmp\nfrom stdin\n");
      assert.equal(r.stderr, "oops\n");
      assert.equal(r.timedOut, false);
    },
  },
  {
    name: "spawn: a hung child is killed at its timeout",
    async run(rt) {
      const t0 = Date.now();
      const r = await rt.spawn({ argv: ["/bin/sleep", "30"], timeoutMs: 300 });
      assert.equal(r.timedOut, true);
      assert.equal(r.code, null);
      assert.equal(r.signal, "SIGTERM");
      assert.ok(Date.now() - t0 < 5_000, "took too long");
    },
  },
  {
    name: "spawn: output beyond the cap is dropped, not buffered",
    async run(rt) {
      const r = await rt.spawn({ argv: ["/usr/bin/head", "-c", "100000", "/dev/zero"], maxOutputBytes: 1000 });
      assert.equal(r.code, 0);
      assert.equal(r.stdout.length, 1000);
    },
  },
  {
    name: "spawn: stdout read into the caller's buffer, or a larger one when it does not fit, within the cap",
    async run(rt) {
      const into = new Uint8Array(64 * 1024);
      const small = await rt.spawn({ argv: ["/usr/bin/printf", "%s", TRICKY], stdoutInto: into });
      assert.equal(small.stdout, "");
      assert.equal(small.stdoutBytes?.buffer, into.buffer);
      assert.equal(new TextDecoder().decode(small.stdoutBytes), TRICKY);
      const big = await rt.spawn({ argv: ["/usr/bin/head", "-c", "300000", "/dev/zero"], stdoutInto: into });
      assert.equal(big.stdoutBytes?.byteLength, 300000);
      assert.notEqual(big.stdoutBytes?.buffer, into.buffer);
      const capped = await rt.spawn({ argv: ["/usr/bin/head", "-c", "100000", "/dev/zero"], stdoutInto: into, maxOutputBytes: 1000 });
      assert.equal(capped.stdoutBytes?.byteLength, 1000);
      const failed = await rt.spawn({ argv: ["/bin/sh", "-c", "printf partial; echo why >&2; exit 4"], stdoutInto: into });
      assert.deepEqual([failed.code, new TextDecoder().decode(failed.stdoutBytes), failed.stderr], [4, "partial", "why\n"]);
      // Bun's temporary stdout files are unlinked at once.
      assert.deepEqual(readdirSync(tmpdir()).filter((f) => f.startsWith(`htcondor-sidecar-${process.pid}-`)), []);
    },
  },
  {
    name: "sqlite: statements, parameters and transactions (rollback on throw)",
    async run(rt) {
      const dir = mkdtempSync(join(tmpdir(), "contract-"));
      try {
        const db = rt.openSqlite(join(dir, "t.db"));
        db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
        db.run("INSERT INTO t VALUES (?, ?)", ["a", 1]);
        assert.throws(() =>
          db.transaction(() => {
            db.run("INSERT INTO t VALUES (?, ?)", ["b", 2]);
            throw new Error("boom");
          })
        );
        db.transaction(() => db.run("UPDATE t SET v = ? WHERE k = ?", [5, "a"]));
        assert.deepEqual(db.all<{ k: string; v: number }>("SELECT k, v FROM t ORDER BY k"), [{ k: "a", v: 5 }]);
        assert.equal(db.get<{ n: number }>("SELECT COUNT(*) AS n FROM t WHERE k = ?", ["zzz"])?.n, 0);
        assert.equal(db.get("SELECT * FROM t WHERE k = ?", ["none"]), undefined);
        db.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
  {
    name: "serve: a GET with a JSON body over TCP reaches the handler (docs/interlink.md#get-requests-carry-a-body, docs/interlink.md#check-2)",
    async run() {
      const server = await serveHttp({ target: { kind: "tcp", host: "127.0.0.1", port: 0 }, bodyLimitBytes: 1 << 20, keepAliveTimeoutMs: 125_000 }, echo);
      try {
        const r = await rawRequest({ port: server.port! }, "GET", "/status", "[]");
        assert.equal(r.status, 200);
        assert.deepEqual(JSON.parse(r.body), { method: "GET", path: "/status", body: "[]", session: "GetStatus#1" });
        // Keep-alive must outlive interLink's 120 s idle pool
        // (docs/interlink.md#timeouts-and-keep-alive).
        assert.match(String(r.headers["keep-alive"]), /timeout=125/);
      } finally {
        await server.close(1000);
      }
    },
  },
  {
    name: "serve: a GET with a body over a unix socket reaches the handler",
    async run() {
      const dir = mkdtempSync(join(tmpdir(), "contract-"));
      const socketPath = join(dir, "s.sock");
      const server = await serveHttp({ target: { kind: "unix", path: socketPath }, bodyLimitBytes: 1 << 20, keepAliveTimeoutMs: 125_000 }, echo);
      try {
        assert.equal(server.url, `unix://${socketPath}`);
        const r = await rawRequest({ socketPath }, "GET", "/getLogs", '{"PodUID":"x"}');
        assert.equal(r.status, 200);
        assert.equal(JSON.parse(r.body).body, '{"PodUID":"x"}');
      } finally {
        await server.close(1000);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
  {
    name: "serve: a body over the limit gets 413 with a plain-text reason",
    async run() {
      const server = await serveHttp({ target: { kind: "tcp", host: "127.0.0.1", port: 0 }, bodyLimitBytes: 100, keepAliveTimeoutMs: 125_000 }, echo);
      try {
        const r = await rawRequest({ port: server.port! }, "POST", "/create", "x".repeat(1000));
        assert.equal(r.status, 413);
        assert.match(r.body, /exceeds the limit of 100 bytes/);
      } finally {
        await server.close(1000);
      }
    },
  },
  {
    name: "serve: close() ends a long-lived stream and returns within the deadline",
    async run() {
      const handler: FetchHandler = (_req, extras) =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(new TextEncoder().encode("first\n"));
              extras.signal.addEventListener("abort", () => c.close());
            },
          }),
        );
      const server = await serveHttp({ target: { kind: "tcp", host: "127.0.0.1", port: 0 }, bodyLimitBytes: 100, keepAliveTimeoutMs: 125_000 }, handler);
      const pending = rawRequest({ port: server.port! }, "GET", "/getLogs", "{}");
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      await server.close(3000);
      const r = await pending;
      assert.equal(r.body, "first\n");
      assert.ok(Date.now() - t0 < 3000);
    },
  },
  {
    name: "serve: a client that goes away mid-stream aborts the handler's signal (a log follow stops; docs/interlink.md#get-getlogs)",
    async run() {
      let aborted!: () => void;
      const gone = new Promise<void>((r) => (aborted = r));
      const handler: FetchHandler = (_req, extras) =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(new TextEncoder().encode("first\n"));
              extras.signal.addEventListener("abort", () => aborted());
            },
          }),
        );
      const server = await serveHttp({ target: { kind: "tcp", host: "127.0.0.1", port: 0 }, bodyLimitBytes: 100, keepAliveTimeoutMs: 125_000 }, handler);
      try {
        await new Promise<void>((resolve, reject) => {
          const req = request({ host: "127.0.0.1", port: server.port!, method: "GET", path: "/getLogs", headers: { "content-length": 2 } }, (res) => {
            res.once("data", () => {
              req.destroy();
              resolve();
            });
          });
          req.on("error", () => {});
          req.on("close", () => resolve());
          req.once("error", reject);
          req.end("{}");
        });
        // Waits for the abort itself: without it the case never ends and the runner's timeout fails it.
        await gone;
      } finally {
        await server.close(1000);
      }
    },
  },
  {
    name: "httpClient: HTTPS with a client certificate, trusting the given CA (docs/operator.md#tls)",
    async run(rt) {
      const dir = mkdtempSync(join(tmpdir(), "contract-"));
      const pki = await makePki(rt, dir);
      const { url, server } = await mtlsServer(pki, (path, res) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ path }));
      });
      const clients: { close(): void }[] = [];
      const attempt = async (tls: Parameters<Runtime["httpClient"]>[0]) => {
        const c = rt.httpClient(tls);
        clients.push(c);
        try {
          const res = await c.fetch(`${url}/api/v1/namespaces?limit=1`, { headers: { accept: "application/json" } });
          return { status: res.status, body: await res.text() };
        } catch (err) {
          return { error: String(err) };
        }
      };
      try {
        assert.deepEqual(await attempt({ ca: pki.ca, cert: pki.clientCert, key: pki.clientKey }), {
          status: 200,
          body: '{"path":"/api/v1/namespaces?limit=1"}',
        });
        // The server demands a certificate of its CA: none, or one of another CA, is turned away.
        assert.ok("error" in await attempt({ ca: pki.ca }));
        assert.ok("error" in await attempt({ ca: pki.ca, cert: pki.strangerCert, key: pki.strangerKey }));
        // A private CA is trusted only when given.
        assert.ok("error" in await attempt({ cert: pki.clientCert, key: pki.clientKey }));
      } finally {
        for (const c of clients) c.close();
        server.closeAllConnections?.();
        await new Promise((r) => server.close(r));
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
  {
    name: "httpClient: a response body streams line by line before the response ends (a watch)",
    async run(rt) {
      const dir = mkdtempSync(join(tmpdir(), "contract-"));
      const pki = await makePki(rt, dir);
      let finish = () => {};
      const { url, server } = await mtlsServer(pki, (_path, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"type":"ADDED"}\n');
        finish = () => res.end('{"type":"DELETED"}\n');
      });
      const c = rt.httpClient({ ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
      try {
        const res = await c.fetch(`${url}/watch`);
        const reader = res.body!.getReader();
        const first = await reader.read();
        assert.equal(new TextDecoder().decode(first.value), '{"type":"ADDED"}\n');
        finish();
        let rest = "";
        for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
        assert.equal(rest, '{"type":"DELETED"}\n');
      } finally {
        c.close();
        server.closeAllConnections?.();
        await new Promise((r) => server.close(r));
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
  {
    name: "httpClient: a v1 client certificate or a key of another certificate is an Error naming neither key, not a crash (docs/operator.md#tls)",
    async run(rt) {
      const dir = mkdtempSync(join(tmpdir(), "contract-"));
      try {
        const pki = await makePki(rt, dir);
        const keyBody = pki.clientKey.split("\n")[1]!;
        const refused = (tls: Parameters<Runtime["httpClient"]>[0], why: RegExp) =>
          assert.throws(() => rt.httpClient(tls), (err: Error) => {
            assert.match(err.message, why);
            assert.ok(!err.message.includes(keyBody), "the key leaked into the message");
            return true;
          });
        refused({ ca: pki.ca, cert: pki.v1Cert, key: pki.clientKey }, /is X\.509 v1; only v3/);
        refused({ ca: pki.ca, cert: pki.clientCert, key: pki.strangerKey }, /client key does not belong to the certificate of "CN=alice/);
        refused({ ca: pki.ca, cert: pki.clientCert }, /needs its key/);
        refused({ ca: pki.ca, cert: pki.clientCert, key: "not a key" }, /does not parse as a PEM private key/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
  {
    // docs/status.md#following-the-event-log: the follower reacts to a log being appended to or created.
    name: "watchFolder: an append to a file in the folder, and a new file, call back; after stop, nothing does",
    async run(rt) {
      const dir = mkdtempSync(join(tmpdir(), "rt-watch-"));
      try {
        let calls = 0;
        // Only a notification that never comes fails: on a busy machine one took longer than the
        // 200 ticks of 10 ms this used to allow. How soon is not promised (the follower polls too).
        // The bound stays under the case's timeout on Bun (contract.test.ts).
        const deadline = Date.now() + 10_000;
        const waitFor = async (n: number) => {
          while (calls < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
          assert.ok(calls >= n, `expected a change notification (${calls} seen)`);
        };
        const stop = rt.watchFolder(dir, () => calls++);
        await new Promise((r) => setTimeout(r, 50));
        writeFileSync(join(dir, "events.log"), "000 (001.000.000) 2026-11-22 07:32:56 Job submitted from host: <x>\n...\n");
        await waitFor(1);
        const seen = calls;
        appendFileSync(join(dir, "events.log"), "001 (001.000.000) 2026-11-22 07:32:57 Job executing on host: <x>\n...\n");
        await waitFor(seen + 1);
        stop();
        const after = calls;
        appendFileSync(join(dir, "events.log"), "...\n");
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(calls, after);
        // A folder that cannot be watched: a no-op, never a throw (the caller polls).
        rt.watchFolder(join(dir, "missing"), () => calls++)();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
];
