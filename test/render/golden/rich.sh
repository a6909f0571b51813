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
POD_NAMESPACE='default'
POD_NAME='web-1'
POD_UID='7c9e6679-7425-40de-944b-e07fc1f90ae7'
POD_IP='10.1.2.3'
INSTANCE_PREFIX='il-7c9e66797425'

RESTART_POLICY='OnFailure'  # Never | OnFailure | Always
MAX_RESTARTS=3
RESTART_AFTER_SUCCESS=0  # Always: also restart after exit 0
BACKOFF_INITIAL_SECONDS=10
BACKOFF_MAX_SECONDS=300
GRACE_SECONDS=20
ACTIVE_DEADLINE_SECONDS=3600  # 0: none
DUMMY=0  # 1: report the containers running, sleep, report them completed
SHARED_FILESYSTEM=0  # 1: container logs go to $_CONDOR_JOB_IWD, the pod folder
DUMMY_SECONDS=1

# Deliberate code channels (site config and allowed annotations), run with bash -c.
COMMAND_PREFIX='source /cvmfs/sw.example.org/setup.sh'
BACKGROUND_COMMANDS=(
  'wstunnel client -L '\''tcp://8080:localhost:8080'\'' wss://mesh.example.org'
)
PRE_EXEC=(
  'echo "pre-exec in $PWD"'
)
JOB_SCRIPT=''  # none: the containers run

RUNTIME_PINNED='/opt/apptainer/bin/apptainer'  # empty: apptainer, then singularity
RUNTIME_SEARCH_PATH=(
  '/cvmfs/oasis.opensciencegrid.org/mis/apptainer/bin'
)
RUNTIME_NO_HOME=1
RUNTIME_CACHE_DIR='/scratch/apptainer-cache'
OLD_RUNTIME='refuse'  # without --no-eval: warn | refuse

EMPTY_DIRS=(
  'shared'
)
# A hostPath volume is bound only when it resolves, on the worker, below one of these (resolved too).
HOST_PATH_PREFIXES=(
  '/cvmfs'
)
FILE_MODES=(  # mode path: HTCondor's transfer may not keep them
  '0600' 'env/i.fetch.env'
  '0600' 'env/c.web.env'
  '0600' 'env/c.sidecar.env'
  '0644' 'volumes/config/app.yaml'
  '0600' 'volumes/creds/token'
)
INIT_CONTAINERS=(init_0)
CONTAINERS=(ctr_0 ctr_1)

# spec.initContainers[0]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
init_0() {
  C_NAME='fetch' C_KEY='i.fetch' C_INIT=1 C_ATTR='InterLinkInit0State'
  C_IMAGE_KIND=container C_IMAGE='docker://curlimages/curl:8.10.1' C_HOST_SITE=''
  C_COMMAND=('sh' '-c')  # empty: the image's entrypoint (run)
  C_ARGS=('curl -fsS "$SOURCE_URL" -o /shared/data && echo '\''fetched $(date)'\''')
  C_WORKDIR=''
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'sandbox' 'emptydir/shared' '' '/shared' 'rw'
  )
  C_RUNTIME_OPTIONS=()  # instance start
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
  C_NAME='web' C_KEY='c.web' C_INIT=0 C_ATTR='InterLinkCtr0State'
  C_IMAGE_KIND=container C_IMAGE='docker://nginx:1.27' C_HOST_SITE=''
  C_COMMAND=()  # empty: the image's entrypoint (run)
  C_ARGS=('nginx' '-g' 'daemon off;')
  C_WORKDIR='/usr/share/nginx/html'
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'host' '/cvmfs/data.example.org' '' '/data' 'ro'
    'sandbox' 'volumes/config' '' '/etc/app' 'ro'
    'sandbox' 'emptydir/shared' '' '/usr/share/nginx/html' 'rw'
  )
  C_RUNTIME_OPTIONS=('--writable-tmpfs')  # instance start
  C_EXEC_OPTIONS=('--env=FROM_SITE=1')  # every exec/run into the instance
  C_GPU_FLAGS=('--nv')  # 1 GPU(s): --rocm for amd.com/gpu, --nv for the others
  # TCP connect: first after 0s, every 2s, timeout 1s, 1 success(es) / 30 failure(s) in a row; failing, kills with 20s grace
  C_STARTUP_PROBE=(0 2 1 1 30 20 tcpSocket '127.0.0.1' 8080)
  # HTTP GET (HTTP): first after 5s, every 10s, timeout 1s, 1 success(es) / 3 failure(s) in a row
  C_READINESS_PROBE=(5 10 1 1 3 20 httpGet 'HTTP' '127.0.0.1' 8080 '/healthz' 1 'X-Probe' 'ready; it'\''s me')
  # exec in the container: first after 10s, every 10s, timeout 2s, 1 success(es) / 3 failure(s) in a row; failing, kills with 20s grace
  C_LIVENESS_PROBE=(10 10 2 1 3 20 exec 'cat' '/tmp/healthy')
  C_POST_START=(exec 'sh' '-c' 'echo started > /tmp/healthy')  # exec in the container
  C_PRE_STOP=(sleep 2)  # sleep
}

# spec.containers[1]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
ctr_1() {
  C_NAME='sidecar' C_KEY='c.sidecar' C_INIT=0 C_ATTR='InterLinkCtr1State'
  C_IMAGE_KIND=host C_IMAGE='' C_HOST_SITE='T2_IT_Legnaro'  # runs on the worker, no container
  C_COMMAND=('./setupwn.sh')  # empty: the image's entrypoint (run)
  C_ARGS=()
  C_WORKDIR=''
  C_MOUNTS=()
  C_RUNTIME_OPTIONS=()  # instance start
  C_EXEC_OPTIONS=()  # every exec/run into the instance
  C_GPU_FLAGS=()
  C_STARTUP_PROBE=()
  C_READINESS_PROBE=()
  C_LIVENESS_PROBE=()
  C_POST_START=()
  C_PRE_STOP=()
}

# ---- src/render/wrapper-lib.bash (the constant library) goes here ----

main "$@"
