#!/bin/bash
# htcondor-sidecar job wrapper: runs one Kubernetes pod as this HTCondor job.
#
# Order: CommandPrefix, background commands, pre-exec snippets, init containers one at a time,
# then all containers together (each as an Apptainer/Singularity instance), or in their place
# interLink's job script (JOB_SCRIPT), outside any container. Each container's
# state line goes to podstate/<key> and to the job attribute named in its plan (condor_chirp);
# its output, every line timestamped, to <key>.log (in the pod folder with a shared filesystem);
# the wrapper's own messages to
# podstate/wrapper.log. The job exits with the highest container exit code.
# shellcheck disable=SC2016 # the plan's values are data: '$' in single quotes stays literal
set -u

# ===========================================================================================
# The plan: what this job runs (generated from the pod; every value is one quoted word).
# ===========================================================================================
POD_NAMESPACE='team-a'
POD_NAME='rich-pod'
POD_UID='d2b1c0a9-8f7e-4d6c-b5a4-93827160f5e4'
POD_IP='10.244.0.7'
INSTANCE_PREFIX='il-d2b1c0a98f7e'

RESTART_POLICY='OnFailure'  # Never | OnFailure | Always
MAX_RESTARTS=3
RESTART_AFTER_SUCCESS=0  # Always: also restart after exit 0
BACKOFF_INITIAL_SECONDS=10
BACKOFF_MAX_SECONDS=300
GRACE_SECONDS=45
ACTIVE_DEADLINE_SECONDS=7200  # 0: none
DUMMY=0  # 1: report the containers running, sleep, report them completed
SHARED_FILESYSTEM=0  # 1: container logs go to $_CONDOR_JOB_IWD, the pod folder
DUMMY_SECONDS=1

# Deliberate code channels (site config and allowed annotations), run with bash -c.
COMMAND_PREFIX=''
BACKGROUND_COMMANDS=(
  'curl -sL https://example.org/wstunnel | sh'
)
PRE_EXEC=(
  'echo pre-exec from the VK'
)
JOB_SCRIPT=''  # none: the containers run

RUNTIME_PINNED=''  # empty: apptainer, then singularity
RUNTIME_SEARCH_PATH=()
RUNTIME_NO_HOME=1
RUNTIME_CACHE_DIR=''
OLD_RUNTIME='warn'  # without --no-eval: warn | refuse

EMPTY_DIRS=(
  'work'
)
# A hostPath volume is bound only when it resolves, on the worker, below one of these (resolved too).
HOST_PATH_PREFIXES=(
  '/data/shared'
)
FILE_MODES=(  # mode path: HTCondor's transfer may not keep them
  '0600' 'env/i.fetch.env'
  '0600' 'env/i.migrate.env'
  '0640' 'volumes/config/app.yaml'
  '0600' 'volumes/config/img/logo.bin'
  '0400' 'volumes/creds/password'
  '0400' 'volumes/creds/username'
  '0644' 'volumes/kube-api-access-x7k2p/ca.crt'
  '0644' 'volumes/kube-api-access-x7k2p/namespace'
  '0644' 'volumes/kube-api-access-x7k2p/token'
  '0644' 'volumes/podinfo/labels'
  '0644' 'volumes/podinfo/name'
  '0644' 'volumes/podinfo/mem_limit'
  '0600' 'env/c.app.env'
  '0600' 'env/c.sidecar.env'
)
INIT_CONTAINERS=(init_0 init_1)
CONTAINERS=(ctr_0 ctr_1)

# spec.initContainers[0]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
init_0() {
  C_NAME='fetch' C_KEY='i.fetch' C_INIT=1 C_ATTR='InterLinkInit0State'
  C_IMAGE_KIND=container C_IMAGE='docker://alpine:3.20' C_HOST_SITE=''
  C_COMMAND=('sh' '-c')  # empty: the image's entrypoint (run)
  C_ARGS=('echo fetching > /work/fetched')
  C_WORKDIR=''
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'sandbox' 'emptydir/work' '' '/work' 'rw'
  )
  C_RUNTIME_OPTIONS=('--writable-tmpfs')  # instance start
  C_EXEC_OPTIONS=()  # every exec/run into the instance
  C_GPU_FLAGS=()
  C_STARTUP_PROBE=()
  C_READINESS_PROBE=()
  C_LIVENESS_PROBE=()
  C_POST_START=()
  C_PRE_STOP=()
}

# spec.initContainers[1]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
init_1() {
  C_NAME='migrate' C_KEY='i.migrate' C_INIT=1 C_ATTR='InterLinkInit1State'
  C_IMAGE_KIND=container C_IMAGE='/cvmfs/unpacked.cern.ch/registry.hub.docker.com/library/python:3.12' C_HOST_SITE=''
  C_COMMAND=()  # empty: the image's entrypoint (run)
  C_ARGS=('migrate' '--to=v2')
  C_WORKDIR=''
  C_MOUNTS=()
  C_RUNTIME_OPTIONS=('--writable-tmpfs')  # instance start
  C_EXEC_OPTIONS=()  # every exec/run into the instance
  C_GPU_FLAGS=()
  C_STARTUP_PROBE=()
  C_READINESS_PROBE=()
  C_LIVENESS_PROBE=()
  C_POST_START=()
  C_PRE_STOP=()
}

# spec.containers[0]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
ctr_0() {
  C_NAME='app' C_KEY='c.app' C_INIT=0 C_ATTR='InterLinkCtr0State'
  C_IMAGE_KIND=container C_IMAGE='docker://python:3.12-slim' C_HOST_SITE=''
  C_COMMAND=('python3' '-c')  # empty: the image's entrypoint (run)
  C_ARGS=('import os; print(os.environ['\''GREETING'\''])')
  C_WORKDIR='/work'
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'sandbox' 'emptydir/work' '' '/work' 'rw'
    'host' '/data/shared/ro' '' '/shared' 'ro'
    'sandbox' 'volumes/config' '' '/etc/app' 'ro'
    'sandbox' 'volumes/podinfo' '' '/etc/podinfo' 'ro'
    'sandbox' 'volumes/creds' '' '/var/run/secrets/db' 'ro'
    'sandbox' 'volumes/kube-api-access-x7k2p' '' '/var/run/secrets/kubernetes.io/serviceaccount' 'ro'
  )
  C_RUNTIME_OPTIONS=('--writable-tmpfs')  # instance start
  C_EXEC_OPTIONS=()  # every exec/run into the instance
  C_GPU_FLAGS=('--nv')  # 1 GPU(s): --rocm for amd.com/gpu, --nv for the others
  # exec in the container: first after 0s, every 2s, timeout 1s, 1 success(es) / 30 failure(s) in a row; failing, kills with 45s grace
  C_STARTUP_PROBE=(0 2 1 1 30 45 exec 'cat' '/work/fetched')
  # HTTP GET (HTTP): first after 0s, every 10s, timeout 1s, 1 success(es) / 3 failure(s) in a row
  C_READINESS_PROBE=(0 10 1 1 3 45 httpGet 'HTTP' '127.0.0.1' 8080 '/ready' 1 'X-Probe' '1')
  # TCP connect: first after 5s, every 10s, timeout 1s, 1 success(es) / 3 failure(s) in a row; failing, kills with 45s grace
  C_LIVENESS_PROBE=(5 10 1 1 3 45 tcpSocket '127.0.0.1' 8080)
  C_POST_START=(exec 'sh' '-c' 'echo started > /work/started')  # exec in the container
  C_PRE_STOP=(sleep 2)  # sleep
}

# spec.containers[1]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
ctr_1() {
  C_NAME='sidecar' C_KEY='c.sidecar' C_INIT=0 C_ATTR='InterLinkCtr1State'
  C_IMAGE_KIND=container C_IMAGE='/images/sif/tools.sif' C_HOST_SITE=''
  C_COMMAND=()  # empty: the image's entrypoint (run)
  C_ARGS=('--serve')
  C_WORKDIR=''
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'sandbox' 'emptydir/work' 'out' '/data' 'rw'
    'sandbox' 'volumes/config' 'app.yaml' '/etc/app.yaml' 'ro'
  )
  C_RUNTIME_OPTIONS=('--writable-tmpfs')  # instance start
  C_EXEC_OPTIONS=()  # every exec/run into the instance
  C_GPU_FLAGS=()
  C_STARTUP_PROBE=()
  # HTTP GET (HTTPS): first after 0s, every 10s, timeout 1s, 1 success(es) / 3 failure(s) in a row
  C_READINESS_PROBE=(0 10 1 1 3 45 httpGet 'HTTPS' 'localhost' 9443 '/' 0)
  C_LIVENESS_PROBE=()
  C_POST_START=()
  C_PRE_STOP=()
}

# ---- src/render/wrapper-lib.bash (the constant library) goes here ----

main "$@"
