/**
 * The structure of a create request (interLink's `RetrievedPodData`) and of the subset of `v1.Pod`
 * the sidecar uses: zod schemas and the types inferred from them. The rules each field must also
 * meet are checked after parsing, in pod.ts.
 *
 * Lenient where the wire is: unknown fields are dropped, and `null` is accepted wherever an array,
 * map or object may be absent, because Go serializes empty slices as `null`
 * (docs/interlink.md#the-create-request, docs/interlink.md#check-7). Absent/null lists become `[]`,
 * maps `{}`, objects `undefined`.
 */
import { z } from "zod";

/** Optional object: null and absent both become undefined. */
const opt = <T extends z.ZodType>(s: T) => s.nullish().transform((v) => v ?? undefined);
/** Optional list: null and absent both become []. */
const list = <T extends z.ZodType>(s: T) => z.array(s).nullish().transform((v) => v ?? []);
/** Optional string map: null and absent both become {}. */
const strMap = () =>
  z
    .record(z.string(), z.string())
    .nullish()
    .transform((v): Record<string, string> => v ?? {});

const int = z.number().int();
/** A Kubernetes quantity arrives as a JSON string, or (Go's Quantity.UnmarshalJSON accepts it) a bare number. */
const quantityText = z.union([z.string(), z.number()]).transform((v) => String(v));
const quantityMap = () =>
  z
    .record(z.string(), quantityText)
    .nullish()
    .transform((v): Record<string, string> => v ?? {});
const intOrString = z.union([int, z.string()]);

const KeyToPathSchema = z.object({ key: z.string(), path: z.string(), mode: opt(int) });

const ObjectFieldSelectorSchema = z.object({ fieldPath: z.string(), apiVersion: opt(z.string()) });
const ResourceFieldSelectorSchema = z.object({
  containerName: opt(z.string()),
  resource: z.string(),
  divisor: opt(quantityText),
});
const KeySelectorSchema = z.object({ name: z.string(), key: z.string(), optional: opt(z.boolean()) });

const EnvVarSchema = z.object({
  name: z.string(),
  value: opt(z.string()),
  valueFrom: opt(
    z.object({
      fieldRef: opt(ObjectFieldSelectorSchema),
      resourceFieldRef: opt(ResourceFieldSelectorSchema),
      configMapKeyRef: opt(KeySelectorSchema),
      secretKeyRef: opt(KeySelectorSchema),
    }),
  ),
});

const EnvFromSchema = z.object({
  prefix: opt(z.string()),
  configMapRef: opt(z.object({ name: z.string(), optional: opt(z.boolean()) })),
  secretRef: opt(z.object({ name: z.string(), optional: opt(z.boolean()) })),
});

const ExecActionSchema = z.object({ command: list(z.string()) });
const HTTPGetActionSchema = z.object({
  path: opt(z.string()),
  port: intOrString,
  host: opt(z.string()),
  scheme: opt(z.enum(["HTTP", "HTTPS"])),
  httpHeaders: list(z.object({ name: z.string(), value: z.string() })),
});
const TCPSocketActionSchema = z.object({ port: intOrString, host: opt(z.string()) });
const GRPCActionSchema = z.object({ port: int, service: opt(z.string()) });
const SleepActionSchema = z.object({ seconds: int });

const ProbeSchema = z.object({
  exec: opt(ExecActionSchema),
  httpGet: opt(HTTPGetActionSchema),
  tcpSocket: opt(TCPSocketActionSchema),
  grpc: opt(GRPCActionSchema),
  initialDelaySeconds: opt(int),
  periodSeconds: opt(int),
  timeoutSeconds: opt(int),
  successThreshold: opt(int),
  failureThreshold: opt(int),
  terminationGracePeriodSeconds: opt(int),
});

const LifecycleHandlerSchema = z.object({
  exec: opt(ExecActionSchema),
  httpGet: opt(HTTPGetActionSchema),
  tcpSocket: opt(TCPSocketActionSchema),
  sleep: opt(SleepActionSchema),
});

const VolumeMountSchema = z.object({
  name: z.string(),
  mountPath: z.string(),
  subPath: opt(z.string()),
  subPathExpr: opt(z.string()),
  readOnly: opt(z.boolean()),
});

const ContainerSchema = z.object({
  name: z.string(),
  image: z.string(),
  command: list(z.string()).optional(),
  args: list(z.string()).optional(),
  workingDir: opt(z.string()),
  env: list(EnvVarSchema),
  envFrom: list(EnvFromSchema),
  ports: list(z.object({ name: opt(z.string()), containerPort: int, protocol: opt(z.string()) })),
  resources: z
    .object({ limits: quantityMap(), requests: quantityMap() })
    .nullish()
    .transform((v) => v ?? { limits: {}, requests: {} }),
  volumeMounts: list(VolumeMountSchema),
  startupProbe: opt(ProbeSchema),
  readinessProbe: opt(ProbeSchema),
  livenessProbe: opt(ProbeSchema),
  lifecycle: opt(z.object({ postStart: opt(LifecycleHandlerSchema), preStop: opt(LifecycleHandlerSchema) })),
  /** Only on init containers: `Always` makes it a sidecar container. */
  restartPolicy: opt(z.string()),
});

const DownwardAPIFileSchema = z.object({
  path: z.string(),
  fieldRef: opt(ObjectFieldSelectorSchema),
  resourceFieldRef: opt(ResourceFieldSelectorSchema),
  mode: opt(int),
});

const ProjectionSchema = z.object({
  configMap: opt(z.object({ name: z.string(), items: list(KeyToPathSchema), optional: opt(z.boolean()) })),
  secret: opt(z.object({ name: z.string(), items: list(KeyToPathSchema), optional: opt(z.boolean()) })),
  downwardAPI: opt(z.object({ items: list(DownwardAPIFileSchema) })),
  serviceAccountToken: opt(
    z.object({ path: z.string(), audience: opt(z.string()), expirationSeconds: opt(int) }),
  ),
});

/** Volume sources the sidecar understands; any other key with a value is a type it cannot provide. */
export const KNOWN_VOLUME_SOURCES = ["configMap", "secret", "projected", "downwardAPI", "emptyDir", "hostPath"] as const;

/** `looseObject`: unknown keys are kept so that an unsupported volume type can be named in the error. */
const VolumeSchema = z.looseObject({
  name: z.string(),
  configMap: opt(
    z.object({ name: z.string(), items: list(KeyToPathSchema), defaultMode: opt(int), optional: opt(z.boolean()) }),
  ),
  secret: opt(
    z.object({
      secretName: z.string(),
      items: list(KeyToPathSchema),
      defaultMode: opt(int),
      optional: opt(z.boolean()),
    }),
  ),
  projected: opt(z.object({ sources: list(ProjectionSchema), defaultMode: opt(int) })),
  downwardAPI: opt(z.object({ items: list(DownwardAPIFileSchema), defaultMode: opt(int) })),
  emptyDir: opt(z.object({ medium: opt(z.string()), sizeLimit: opt(quantityText) })),
  hostPath: opt(z.object({ path: z.string(), type: opt(z.string()) })),
});

export const PodSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    labels: strMap(),
    annotations: strMap(),
  }),
  spec: z.object({
    containers: list(ContainerSchema),
    initContainers: list(ContainerSchema),
    volumes: list(VolumeSchema),
    restartPolicy: opt(z.enum(["Always", "OnFailure", "Never"])),
    terminationGracePeriodSeconds: opt(int),
    activeDeadlineSeconds: opt(int),
    nodeName: opt(z.string()),
    serviceAccountName: opt(z.string()),
    hostname: opt(z.string()),
  }),
  status: z
    .object({ podIP: opt(z.string()), hostIP: opt(z.string()), phase: opt(z.string()) })
    .nullish()
    .transform((v): { podIP?: string; hostIP?: string; phase?: string } => v ?? {}),
});

const ConfigMapSchema = z.object({
  metadata: z.object({ name: z.string() }),
  data: strMap(),
  binaryData: strMap(),
});
const SecretSchema = z.object({
  metadata: z.object({ name: z.string() }),
  /** base64 (Go []byte) */
  data: strMap(),
  /** Plain text; interLink never fills it, but a hand-written request may. */
  stringData: strMap(),
  type: opt(z.string()),
});

export const RetrievedContainerSchema = z.object({
  name: z.string(),
  configMaps: list(ConfigMapSchema),
  /** Synthetic ConfigMaps, one per projected volume, named after the VOLUME (docs/interlink.md#volume-data). */
  projectedvolumemaps: list(ConfigMapSchema),
  secrets: list(SecretSchema),
});

export const CreateRequestSchema = z.object({
  pod: PodSchema,
  container: list(RetrievedContainerSchema),
  jobConfig: z.unknown().optional(),
  jobScript: opt(z.string()),
});

export type Pod = z.output<typeof PodSchema>;
export type PodSpec = Pod["spec"];
export type Container = z.output<typeof ContainerSchema>;
export type Volume = z.output<typeof VolumeSchema>;
export type VolumeMount = z.output<typeof VolumeMountSchema>;
export type EnvVar = z.output<typeof EnvVarSchema>;
export type EnvFromSource = z.output<typeof EnvFromSchema>;
export type Probe = z.output<typeof ProbeSchema>;
export type LifecycleHandler = z.output<typeof LifecycleHandlerSchema>;
export type KeyToPath = z.output<typeof KeyToPathSchema>;
export type DownwardAPIFile = z.output<typeof DownwardAPIFileSchema>;
export type ResourceFieldSelector = z.output<typeof ResourceFieldSelectorSchema>;
export type ConfigMap = z.output<typeof ConfigMapSchema>;
export type Secret = z.output<typeof SecretSchema>;
export type RetrievedContainer = z.output<typeof RetrievedContainerSchema>;
export type CreateRequest = z.output<typeof CreateRequestSchema>;
