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
POD_IP=''
INSTANCE_PREFIX='il-7c9e66797425'

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

EMPTY_DIRS=()
# A hostPath volume is bound only when it resolves, on the worker, below one of these (resolved too).
HOST_PATH_PREFIXES=()
FILE_MODES=(  # mode path: HTCondor's transfer may not keep them
  '0600' 'env/c.main.env'
)
INIT_CONTAINERS=()
CONTAINERS=(ctr_0)

# spec.containers[0]
# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)
ctr_0() {
  C_NAME='main' C_KEY='c.main' C_INIT=0 C_ATTR='InterLinkCtr0State'
  C_IMAGE_KIND=container C_IMAGE='docker://busybox:1.36' C_HOST_SITE=''
  C_COMMAND=('true')  # empty: the image's entrypoint (run)
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
