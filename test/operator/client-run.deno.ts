// Run by client.test.ts under Deno: the same client, on Deno's HTTPS client, against the real API
// server (docs/operator.md#tls). Prints one JSON line: what each kubeconfig kind read.
import { denoRuntime } from "../../src/runtime/deno.ts";
import { loadConnection, openKubeClient } from "../../src/kube/connect.ts";
import { CONFIGMAPS, NAMESPACES } from "../../src/kube/resources.ts";

const out: Record<string, unknown> = {};
for (const [kind, path] of Object.entries(JSON.parse(Deno.args[0]!) as Record<string, string>)) {
  const { client, close } = openKubeClient(denoRuntime, loadConnection({ kubeconfig: path, env: {}, now: Date.now }));
  try {
    const ns = await client.get(NAMESPACES, undefined, "default");
    const { resourceVersion } = await client.list(CONFIGMAPS, { namespace: "default" });
    const ctl = new AbortController();
    const watching = (async () => {
      for await (const ev of client.watch(CONFIGMAPS, { namespace: "default", resourceVersion, signal: ctl.signal })) {
        if (ev.type === "ADDED") return ev.object.metadata.name;
      }
    })();
    await client.create(CONFIGMAPS, "default", { metadata: { name: `from-deno-${kind}` } });
    out[kind] = { namespace: ns.metadata.name, watched: await watching };
    ctl.abort();
  } catch (err) {
    out[kind] = { error: (err as Error).message };
  } finally {
    close();
  }
}
await Deno.stdout.write(new TextEncoder().encode(JSON.stringify(out) + "\n"));
