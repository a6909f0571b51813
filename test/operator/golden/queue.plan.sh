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
POD_NAME='queue'
POD_UID='5f0c9a2e-1b7d-4c11-9d3e-0a8e6c2b7f41'
POD_IP=''
INSTANCE_PREFIX='il-5f0c9a2e1b7d'
# This proc's ProcId: HTCondor passes it as the argument (arguments = $(ProcId)).
PROC_ID=${1-}
[[ $PROC_ID =~ ^[0-9]+$ ]] || { echo "job.sh: expected the proc's ProcId as its argument, got '$PROC_ID'" >&2; exit 2; }

RESTART_POLICY='Never'  # Never | OnFailure | Always
MAX_RESTARTS=3
RESTART_AFTER_SUCCESS=0  # Always: also restart after exit 0
BACKOFF_INITIAL_SECONDS=10
BACKOFF_MAX_SECONDS=300
GRACE_SECONDS=30
ACTIVE_DEADLINE_SECONDS=0  # 0: none
DUMMY=0  # 1: report the containers running, sleep, report them completed
SHARED_FILESYSTEM=0  # 1: container logs go to $_CONDOR_JOB_IWD, the pod folder
DUMMY_SECONDS=1

# Deliberate code channels (site config and allowed annotations), run with bash -c.
COMMAND_PREFIX=''
BACKGROUND_COMMANDS=()
PRE_EXEC=()
JOB_SCRIPT=''  # none: the containers run

RUNTIME_PINNED=''  # empty: apptainer, then singularity
RUNTIME_SEARCH_PATH=()
RUNTIME_NO_HOME=1
RUNTIME_CACHE_DIR=''
OLD_RUNTIME='warn'  # without --no-eval: warn | refuse

EMPTY_DIRS=(
  'htcjob-work'
)
# An HTCJob: this emptyDir comes back as work/, whole or not at all (keep_work).
KEEP_WORK_DIR='htcjob-work'
KEEP_WORK_MAX_BYTES=104857600
KEEP_WORK_MAX_FILES=10000
# A hostPath volume is bound only when it resolves, on the worker, below one of these (resolved too).
HOST_PATH_PREFIXES=()
FILE_MODES=(  # mode path: HTCondor's transfer may not keep them
  '0644' 'volumes/htcjob-script/script'
  '0600' 'env/c.htcjob.env'
)
INIT_CONTAINERS=()
CONTAINERS=(ctr_0)

# spec.containers[0]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
ctr_0() {
  C_NAME='htcjob' C_KEY='c.htcjob' C_INIT=0 C_ATTR='InterLinkCtr0State'
  C_IMAGE_KIND=container C_IMAGE='docker://centos' C_HOST_SITE=''
  C_COMMAND=('bash')  # empty: the image's entrypoint (run)
  C_ARGS=('/htcjob/script')
  C_ARGS+=("$PROC_ID")  # this proc's ProcId (see PROC_ID)
  C_WORKDIR='/htcjob/work'
  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first
    'sandbox' 'volumes/htcjob-script' 'script' '/htcjob/script' 'ro'
    'sandbox' 'emptydir/htcjob-work' '' '/htcjob/work' 'rw'
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

# ---- src/render/wrapper-lib.bash (the constant library) goes here ----

main "$@"
