import { hasControlOrLineBreak } from "../errors.ts";
import { headerValueProblem } from "../http-header.ts";
import type { Container, LifecycleHandler, PathSeg, Probe } from "../pod.ts";
import type { Handler, ProbePlan } from "../types.ts";
import { type Ctx, fail } from "./context.ts";

const DEFAULT_HOST = "127.0.0.1";

// Probes and lifecycle handlers

function resolvePort(port: number | string, c: Container, path: PathSeg[], ctx: Ctx): number {
  let n: number | undefined;
  if (typeof port === "number") n = port;
  else if (/^\d+$/.test(port)) n = Number(port);
  else {
    n = c.ports.find((p) => p.name === port)?.containerPort;
    if (n === undefined) fail(ctx, path, `named port ${ctx.quote(port)} is not in the ports of container ${ctx.quote(c.name)}`);
  }
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(ctx, path, `${n} must be a port between 1 and 65535`);
  return n;
}

function noLineBreaks(value: string, path: PathSeg[], ctx: Ctx): string {
  if (hasControlOrLineBreak(value)) fail(ctx, path, `${ctx.quote(value)} must not contain control characters or line breaks`);
  return value;
}

export function planHandler(h: Probe | LifecycleHandler, c: Container, path: PathSeg[], ctx: Ctx): Handler {
  const kinds = (["exec", "httpGet", "tcpSocket", "grpc", "sleep"] as const).filter(
    (k) => (h as Record<string, unknown>)[k] !== undefined,
  );
  if (kinds.length !== 1) {
    return fail(ctx, path, kinds.length === 0 ? "must set a handler (exec, httpGet or tcpSocket)" : `must set only one handler (found ${kinds.join(", ")})`);
  }
  const kind = kinds[0]!;
  if (kind === "grpc") return fail(ctx, [...path, "grpc"], "grpc probes are not supported; use exec, httpGet or tcpSocket");
  if (kind === "exec") {
    const command = (h as Probe).exec!.command;
    if (command.length === 0) fail(ctx, [...path, "exec", "command"], "must not be empty");
    return { kind: "exec", command };
  }
  if (kind === "httpGet") {
    const g = (h as Probe).httpGet!;
    const p = [...path, "httpGet"];
    return {
      kind: "httpGet",
      scheme: g.scheme ?? "HTTP",
      host: g.host ? noLineBreaks(g.host, [...p, "host"], ctx) : DEFAULT_HOST,
      port: resolvePort(g.port, c, [...p, "port"], ctx),
      path: g.path ? noLineBreaks(g.path, [...p, "path"], ctx) : "/",
      headers: g.httpHeaders.map((hd, i): [string, string] => {
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(hd.name)) fail(ctx, [...p, "httpHeaders", i, "name"], `${ctx.quote(hd.name)} is not an HTTP header name`);
        const why = headerValueProblem(hd.value);
        return [hd.name, why ? fail(ctx, [...p, "httpHeaders", i, "value"], `${ctx.quote(hd.value)} ${why}`) : hd.value];
      }),
    };
  }
  if (kind === "tcpSocket") {
    const t = (h as Probe).tcpSocket!;
    const p = [...path, "tcpSocket"];
    return {
      kind: "tcpSocket",
      host: t.host ? noLineBreaks(t.host, [...p, "host"], ctx) : DEFAULT_HOST,
      port: resolvePort(t.port, c, [...p, "port"], ctx),
    };
  }
  const seconds = (h as LifecycleHandler).sleep!.seconds;
  if (seconds < 0) fail(ctx, [...path, "sleep", "seconds"], `${seconds} must be >= 0`);
  return { kind: "sleep", seconds };
}

/**
 * Kubernetes' defaults (SetDefaults_Probe): an unset or zero field takes the default. And its
 * validation (validateProbe, validateLivenessProbe/StartupProbe/ReadinessProbe): liveness and
 * startup probes need successThreshold 1; a probe's own terminationGracePeriodSeconds is > 0 and
 * only for liveness and startup probes, whose failure kills the container.
 */
export function planProbe(p: Probe, kind: "startupProbe" | "readinessProbe" | "livenessProbe", c: Container, path: PathSeg[], ctx: Ctx): ProbePlan {
  const num = (key: "initialDelaySeconds" | "periodSeconds" | "timeoutSeconds" | "successThreshold" | "failureThreshold", dflt: number) => {
    const v = p[key];
    if (v !== undefined && v < 0) fail(ctx, [...path, key], `${v} must be >= 0`);
    return v ? v : dflt;
  };
  const plan: ProbePlan = {
    handler: planHandler(p, c, path, ctx),
    initialDelaySeconds: num("initialDelaySeconds", 0),
    periodSeconds: num("periodSeconds", 10),
    timeoutSeconds: num("timeoutSeconds", 1),
    successThreshold: num("successThreshold", 1),
    failureThreshold: num("failureThreshold", 3),
  };
  if (kind !== "readinessProbe" && plan.successThreshold !== 1) {
    fail(ctx, [...path, "successThreshold"], `${plan.successThreshold} must be 1 for a ${kind}`);
  }
  const grace = p.terminationGracePeriodSeconds;
  if (grace !== undefined) {
    if (kind === "readinessProbe") fail(ctx, [...path, "terminationGracePeriodSeconds"], "must not be set for a readinessProbe");
    if (grace <= 0) fail(ctx, [...path, "terminationGracePeriodSeconds"], `${grace} must be greater than 0`);
    plan.terminationGracePeriodSeconds = grace;
  }
  return plan;
}
