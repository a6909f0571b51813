# The constant part of the job wrapper: bash functions and `main`, the same for every pod.
# renderWrapper (wrapper.ts) puts the pod's plan (quoted variables, arrays and one function per
# container) in front of this file and `main "$@"` after it; the file is imported as text and
# spliced in byte for byte. It relies on bash >= 4.2 and coreutils only.
#
# ===========================================================================================
# Library (constant code, the same for every pod). Nothing below depends on the pod except
# through the plan variables above.
#
# Processes: the wrapper (main) runs setup, the snippets and one supervisor subshell per
# container; each supervisor owns its container's state, log and instance, and exits with the
# container's final exit code. Files under .wrapper/ (not transferred) coordinate them:
#   .wrapper/stop           written by main to stop the pod (content: the reason)
#   .wrapper/<key>.*        probe and hook results of the container's current run
# ===========================================================================================

WRAPPER_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Variables HTCondor sets for the slot that containers keep (besides *_NUM_THREADS & co.).
SLOT_ENV_FIXED=(CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES
  HIP_VISIBLE_DEVICES OMP_THREAD_LIMIT GOMAXPROCS CUBACORES TF_LOOP_PARALLEL_ITERATIONS BATCH_SYSTEM)
TICK=0.2

# ---- time and messages --------------------------------------------------------------------

# TS = now as RFC 3339 UTC with microseconds (.000000 when bash has no EPOCHREALTIME).
stamp() {
  local t=${EPOCHREALTIME:-}
  if [[ $t == *.* ]]; then
    printf -v TS '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "${t%.*}" "${t#*.}"
  else
    printf -v TS '%(%Y-%m-%dT%H:%M:%S)T.000000Z' -1
  fi
}

# NOW = epoch seconds.
now() { printf -v NOW '%(%s)T' -1; }

# NOW_MS = epoch milliseconds (whole seconds when bash has no EPOCHREALTIME).
now_ms() {
  local t=${EPOCHREALTIME:-}
  if [[ $t == *.* ]]; then
    t=${t/./}
    NOW_MS=$((10#$t / 1000))
  else
    now
    NOW_MS=$((NOW * 1000))
  fi
}

# Wrapper messages go to podstate/wrapper.log, never into a container's log.
wlog() {
  stamp
  printf '%s %s: %s\n' "$TS" "$WHO" "$*" >>"$WLOG"
}

# Copies stdin to stdout with every line prefixed by a timestamp and one space; a last line
# without a newline is kept as it is.
log_lines() {
  local line
  while IFS= read -r line; do
    stamp
    printf '%s %s\n' "$TS" "$line"
  done
  if [[ -n $line ]]; then
    stamp
    printf '%s %s' "$TS" "$line"
  fi
}

# Like log_lines, for wrapper.log: "<time> <who>: <line>".
log_lines_as() {
  local line
  while IFS= read -r line || [[ -n $line ]]; do
    stamp
    printf '%s %s: %s\n' "$TS" "$1" "$line"
  done
}

# Sleeps $1 seconds without forking (a read that times out on a FIFO nobody writes to);
# a trapped signal ends it early.
nap() {
  if [[ -n ${NAP_FD:-} ]]; then
    read -r -t "$1" -u "$NAP_FD" _ 2>/dev/null
  else
    sleep "$1"
  fi
  return 0
}

# ---- condor_chirp ----------------------------------------------------------------------------

find_chirp() {
  CHIRP='' CHIRP_FAILURES=0
  local c
  # condor_chirp reaches the starter through this file; without it (not under HTCondor) skip it.
  if [[ ! -f ${_CONDOR_CHIRP_CONFIG:-$SANDBOX/.chirp.config} ]]; then
    wlog "no chirp configuration: container states return only with the output files"
    return 0
  fi
  for c in ${_CONDOR_BIN:+"$_CONDOR_BIN/../libexec/condor_chirp"} /usr/libexec/condor/condor_chirp; do
    if [[ -f $c && -x $c ]]; then
      CHIRP=$c
      wlog "condor_chirp: $c"
      return 0
    fi
  done
  wlog "condor_chirp not found: container states return only with the output files"
}

# Sets a job attribute; never fails the job (the state files still come back with the output).
chirp_attr() {
  [[ -n $CHIRP ]] || return 0
  local out rc
  out=$(timeout -k 2 10 "$CHIRP" set_job_attr "$1" "$2" 2>&1 </dev/null)
  rc=$?
  if ((rc != 0 && ++CHIRP_FAILURES <= 3)); then
    wlog "condor_chirp set_job_attr $1 failed (exit $rc): ${out//$'\n'/ }"
    ((CHIRP_FAILURES == 3)) && wlog "further condor_chirp failures are not logged"
  fi
  return 0
}

# keep_log <key>: the last LOG_KEEP_BYTES of the container's log (from a line start) written to
# the same name in the pod folder on the submit side, with condor_chirp put (the shadow writes it
# relative to the job's Iwd). For a container the kernel killed: on a pool that enforces memory
# HTCondor holds the job next, and a held job sends no output back (docs/logs.md#a-job-killed-for-memory).
# With a shared filesystem the log is there already.
LOG_KEEP_BYTES=262144
keep_log() {
  [[ -n $CHIRP && $LOG_DIR == "$SANDBOX" ]] || return 0
  local src=$LOG_DIR/$1.log tmp=$RUN_DIR/keep.$1.$BASHPID size out rc
  size=$(stat -c %s -- "$src" 2>/dev/null) || return 0
  if ((size > LOG_KEEP_BYTES)); then
    tail -c "$LOG_KEEP_BYTES" -- "$src" | tail -n +2 >"$tmp"
  else
    cp -- "$src" "$tmp"
  fi || return 0
  out=$(timeout -k 2 30 "$CHIRP" put -perm 600 "$tmp" "$1.log" 2>&1 </dev/null)
  rc=$?
  rm -f -- "$tmp"
  if ((rc == 0)); then
    wlog "killed by SIGKILL: its log's last $((size < LOG_KEEP_BYTES ? size : LOG_KEEP_BYTES)) bytes put in the pod folder"
  else
    wlog "condor_chirp put $1.log failed (exit $rc): ${out//$'\n'/ }"
  fi
  return 0
}

# ---- container state lines (format: src/core/state-line.ts) ----------------------------------

# The supervisor's view of its container. S_*: current state (S_MESSAGE: why, for people), L_*:
# last terminated run.
reset_state() {
  S_STATE=waiting S_REASON=ContainerCreating S_EXIT='' S_STARTED='' S_FINISHED='' S_READY=0 S_RESTARTS=0
  S_SIGNAL='' S_MESSAGE='' L_EXIT='' L_REASON='' L_STARTED='' L_FINISHED=''
}

# b64url <text>: B64 = its first 400 bytes in unpadded base64url, the one form of free text that
# a chirped string keeps (chirp drops backslashes and whole values with a newline).
b64url() {
  B64=$(printf '%s' "$1" | head -c 400 | base64 -w 0 | tr '+/' '-_' | tr -d '=')
}

# LINE = the state line; the message, when there is one, is a 14th field.
state_line() {
  printf -v LINE '1 %s %s %s %s %s %s %s %s %s %s %s %s' "$S_STATE" "${S_REASON:--}" "${S_EXIT:--}" \
    "${S_STARTED:--}" "${S_FINISHED:--}" "$S_READY" "$S_RESTARTS" "${L_EXIT:--}" "${L_REASON:--}" \
    "${L_STARTED:--}" "${L_FINISHED:--}" "${S_SIGNAL:--}"
  if [[ -n $S_MESSAGE ]]; then
    b64url "$S_MESSAGE"
    LINE+=" ${B64:--}"
  fi
}

# write_state <key> <attr> <line>: atomic file update, then chirp the line and, after it, the
# time of the change: a chirp changes no status time, and a sidecar that cannot read the job's
# event log (a spooled job) asks the schedd for the jobs whose InterLinkStateTime is recent
# (docs/status.md#following-spooled-jobs).
write_state() {
  local tmp=$RUN_DIR/state.$1.$BASHPID t
  if printf '%s\n' "$3" >"$tmp" && mv -f -- "$tmp" "$STATE_DIR/$1"; then :; else
    wlog "cannot write $STATE_DIR/$1"
  fi
  chirp_attr "$2" "\"$3\""
  printf -v t '%(%s)T' -1
  chirp_attr InterLinkStateTime "$t"
}

report() {
  state_line
  wlog "state: $LINE"
  write_state "$C_KEY" "$C_ATTR" "$LINE"
}

# force_terminated <key> <attr> <reason> <exit code>: ends a container's state from outside
# its supervisor (never started, or the supervisor died); a terminated state is kept.
force_terminated() {
  local f=() line
  read -r -a f <"$STATE_DIR/$1" 2>/dev/null
  ((${#f[@]} >= 13)) || f=(1 waiting - - - - 0 0 - - - - -)
  [[ ${f[1]} == terminated ]] && return 0
  now
  # A waiting state's message does not explain this end.
  f=("${f[@]:0:13}")
  f[1]=terminated f[2]=$3 f[3]=$4 f[5]=$NOW f[6]=0
  line="${f[*]}"
  WHO=$1 wlog "state: $line"
  write_state "$1" "$2" "$line"
}

# exit_code_of <key>: EXIT = the exit code in the container's state line (0 when unknown).
exit_code_of() {
  local f=()
  read -r -a f <"$STATE_DIR/$1" 2>/dev/null
  EXIT=${f[3]:--}
  [[ $EXIT =~ ^[0-9]+$ ]] || EXIT=0
}

# ---- the container runtime -------------------------------------------------------------------

# Sets RT (path), RT_NOEVAL (1 when --no-eval works) and RT_ENV_PREFIX.
find_runtime() {
  RT='' RT_NOEVAL=0 RT_ENV_PREFIX=APPTAINERENV_
  local cands=() dirs=() d n c
  if [[ -n $RUNTIME_PINNED ]]; then
    cands=("$RUNTIME_PINNED")
  else
    IFS=: read -r -a dirs <<<"$PATH"
    dirs+=(${RUNTIME_SEARCH_PATH[@]+"${RUNTIME_SEARCH_PATH[@]}"})
    [[ -n ${_CONDOR_BIN:-} ]] && dirs+=("$_CONDOR_BIN/../libexec")
    for n in apptainer singularity; do
      for d in "${dirs[@]}"; do [[ -n $d ]] && cands+=("$d/$n"); done
    done
  fi
  for c in "${cands[@]}"; do
    if [[ -f $c && -x $c ]]; then RT=$c; break; fi
  done
  if [[ -z $RT ]]; then
    wlog "no container runtime: looked for ${cands[*]}"
    return 1
  fi
  # The runtime is started from / (see in_root): a path relative to the sandbox must not break.
  [[ $RT == /* ]] || RT=$SANDBOX/$RT
  local out major minor flavour
  out=$(timeout -k 5 120 "$RT" --version 2>&1 </dev/null)
  wlog "container runtime: $RT ($out)"
  [[ $out == *pptainer* ]] || RT_ENV_PREFIX=SINGULARITYENV_
  if [[ $out =~ (apptainer|singularity-ce)\ version\ v?([0-9]+)\.([0-9]+) ]]; then
    flavour=${BASH_REMATCH[1]} major=$((10#${BASH_REMATCH[2]})) minor=$((10#${BASH_REMATCH[3]}))
    case $flavour in
      apptainer) ((major > 1 || (major == 1 && minor >= 1))) && RT_NOEVAL=1 ;;
      singularity-ce) ((major > 3 || (major == 3 && minor >= 10))) && RT_NOEVAL=1 ;;
    esac
  else
    # Another flavour or version string: ask the runtime itself.
    out=$(timeout -k 5 60 "$RT" exec --help 2>&1 </dev/null)
    [[ $out == *--no-eval* ]] && RT_NOEVAL=1
  fi
  return 0
}

needs_runtime() {
  local fn
  # A job script runs in place of the containers: it finds its own tools.
  [[ -n $JOB_SCRIPT ]] && return 1
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    [[ $C_IMAGE_KIND == host ]] || return 0
  done
  return 1
}

# ---- setup -----------------------------------------------------------------------------------

wrapper_init() {
  PATH=$WRAPPER_PATH
  export PATH TZ=UTC LC_ALL=C
  umask 077
  SANDBOX=${_CONDOR_SCRATCH_DIR:-$PWD}
  cd -- "$SANDBOX" || { echo "job.sh: cannot enter the sandbox $SANDBOX" >&2; exit 1; }
  SANDBOX=$PWD
  STATE_DIR=$SANDBOX/podstate RUN_DIR=$SANDBOX/.wrapper
  WLOG=$STATE_DIR/wrapper.log WHO=pod
  mkdir -p -- "$STATE_DIR" "$RUN_DIR" "$SANDBOX/tmp" || { echo "job.sh: cannot create $STATE_DIR" >&2; exit 1; }
  rm -f -- "$RUN_DIR/stop"
  now_ms
  T0_MS=$NOW_MS STOP_REASON='' SUP_PIDS=() BG_PIDS=() SNIPPET_PID=''
  if mkfifo -- "$RUN_DIR/nap" 2>/dev/null || [[ -p $RUN_DIR/nap ]]; then
    exec {NAP_FD}<>"$RUN_DIR/nap"
  fi
  wlog "job.sh for pod $POD_NAMESPACE/$POD_NAME ($POD_UID) starts in $SANDBOX; bash $BASH_VERSION"
  # Container logs: in the sandbox, returned with the output; with a shared filesystem, in the
  # job's submit folder (HTCondor's _CONDOR_JOB_IWD, the pod folder), where the sidecar reads them
  # while the job runs (and they are not in transfer_output_files).
  LOG_DIR=$SANDBOX
  if ((SHARED_FILESYSTEM)); then
    if [[ -n ${_CONDOR_JOB_IWD:-} && -d $_CONDOR_JOB_IWD && -w $_CONDOR_JOB_IWD ]]; then
      LOG_DIR=$_CONDOR_JOB_IWD
    else
      wlog "SharedFilesystem: _CONDOR_JOB_IWD (${_CONDOR_JOB_IWD:-unset}) is not a folder this job can write: container logs stay in the sandbox and do not come back"
    fi
  fi
  wlog "container logs go to $LOG_DIR"
}

setup() {
  local i fn
  for ((i = 0; i + 1 < ${#FILE_MODES[@]}; i += 2)); do
    chmod -- "${FILE_MODES[i]}" "${FILE_MODES[i + 1]}" 2>/dev/null || wlog "cannot chmod ${FILE_MODES[i + 1]}"
  done
  for i in ${EMPTY_DIRS[@]+"${EMPTY_DIRS[@]}"}; do
    mkdir -p -- "emptydir/$i" || wlog "cannot create emptydir/$i"
  done
  [[ -n ${KEEP_WORK_DIR:-} ]] && { mkdir -p -- work || wlog "cannot create work"; }
  # Everything listed in transfer_output_files exists from the start. The fresh states are
  # chirped too: after an eviction HTCondor runs the job again from scratch, and the job ad still
  # holds the previous run's last states (often "terminated") until this run reports each one.
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    : >>"$LOG_DIR/$C_KEY.log"
    : >>"$LOG_DIR/$C_KEY.prev.log"
    reset_state
    state_line
    write_state "$C_KEY" "$C_ATTR" "$LINE"
  done
  CURL=$(type -P curl || :)
  # What HTCondor set for the slot and the containers keep.
  SLOT_ENV_NAMES=()
  local n
  for n in $(compgen -e); do
    case $n in
      *_NUM_THREADS | *_CPU_COUNT | *_MAX_THREADS) SLOT_ENV_NAMES+=("$n") ;;
      *) [[ " ${SLOT_ENV_FIXED[*]} " == *" $n "* ]] && SLOT_ENV_NAMES+=("$n") ;;
    esac
  done
  if [[ -n $RUNTIME_CACHE_DIR ]]; then
    export APPTAINER_CACHEDIR=$RUNTIME_CACHE_DIR SINGULARITY_CACHEDIR=$RUNTIME_CACHE_DIR
    mkdir -p -- "$RUNTIME_CACHE_DIR" 2>/dev/null || wlog "cannot create the cache directory $RUNTIME_CACHE_DIR"
  fi
}

# ---- pod-level stop (SIGTERM, activeDeadlineSeconds) ------------------------------------------

# request_stop <reason>: every supervisor stops its container (preStop, SIGTERM, SIGKILL after
# the grace period) and reports it terminated.
request_stop() {
  [[ -n $STOP_REASON ]] && return 0
  STOP_REASON=$1
  wlog "stopping the pod: $1"
  printf '%s\n' "$1" >"$RUN_DIR/stop.tmp" && mv -f -- "$RUN_DIR/stop.tmp" "$RUN_DIR/stop"
  local p
  for p in ${SUP_PIDS[@]+"${SUP_PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null; done
  # A snippet is its own process group (see in_group): the whole group, children included.
  [[ -n $SNIPPET_PID ]] && kill -TERM -- "-$SNIPPET_PID" 2>/dev/null
  return 0
}

check_deadline() {
  ((ACTIVE_DEADLINE_SECONDS > 0)) || return 0
  now_ms
  ((NOW_MS - T0_MS >= ACTIVE_DEADLINE_SECONDS * 1000)) && request_stop DeadlineExceeded
  return 0
}

# ---- snippets: CommandPrefix, pre-exec, background commands (deliberate code channels) -------

# Exports the NUL-separated NAME=value records of a file into the wrapper, except bash's own.
import_env() {
  local rec name
  [[ -f $1 ]] || return 0
  while IFS= read -r -d '' rec; do
    name=${rec%%=*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    case $name in PWD | OLDPWD | SHLVL | _ | BASH* | SHELLOPTS | EUID | UID | PPID) continue ;; esac
    export "$name=${rec#*=}"
  done <"$1"
}

# in_group <label> <code>: starts bash -c <code> in the background as its own process group
# (job control on just for the start), output to wrapper.log; GROUP_PID = its pid and group id. The
# group lets a stop reach the snippet's children too: HTCondor signals the wrapper alone, and a
# killed bash would leave them running (and holding the job's output open).
in_group() {
  set -m
  "$BASH" -c "$2" </dev/null > >(log_lines_as "$1" >>"$WLOG") 2>&1 &
  GROUP_PID=$!
  set +m
}

# run_snippet <what> <code>: runs the code with bash -c, output to wrapper.log; returns its status.
run_snippet() {
  wlog "$1: starting"
  in_group "$1" "$2"
  SNIPPET_PID=$GROUP_PID
  while kill -0 "$SNIPPET_PID" 2>/dev/null; do
    check_deadline
    nap "$TICK"
  done
  wait "$SNIPPET_PID"
  local rc=$?
  SNIPPET_PID=
  wlog "$1: exit $rc"
  return "$rc"
}

start_background() {
  local i
  for ((i = 0; i < ${#BACKGROUND_COMMANDS[@]}; i++)); do
    wlog "background[$i]: starting"
    in_group "background[$i]" "${BACKGROUND_COMMANDS[i]}"
    BG_PIDS+=("$GROUP_PID")
  done
}

stop_background() {
  local p
  for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do kill -TERM -- "-$p" 2>/dev/null; done
}

# ---- handlers: probes and lifecycle hooks ------------------------------------------------------

# An HTTP GET with bash alone (no curl): success on a 2xx or 3xx status.
# shellcheck disable=SC2317 # http_get runs it by name in a child bash
devtcp_get() { # host port path [name value]...
  local host=$1 port=$2 path=$3 req status hosthdr=1
  shift 3
  exec 3<>"/dev/tcp/$host/$port" || return 1
  req="GET $path HTTP/1.0"$'\r\n'
  while (($# >= 2)); do
    [[ ${1,,} == host ]] && hosthdr=0
    req+="${1//[$'\r\n']/}: ${2//[$'\r\n']/}"$'\r\n'
    shift 2
  done
  ((hosthdr)) && req+="Host: $host:$port"$'\r\n'
  req+="User-Agent: kube-probe/1.0"$'\r\n\r\n'
  printf '%s' "$req" >&3
  IFS= read -r status <&3 || return 1
  [[ $status =~ ^HTTP/[0-9.]+\ +([0-9][0-9][0-9]) ]] || return 1
  ((10#${BASH_REMATCH[1]} >= 200 && 10#${BASH_REMATCH[1]} < 400))
}

http_get() { # timeout scheme host port path nheaders [name value]...
  local tmo=$1 scheme=$2 host=$3 port=$4 path=$5 h code
  shift 6
  h=$host
  [[ $h == *:* ]] && h="[$h]"
  if [[ -n $CURL ]]; then
    local args=(-sS -k -g -o /dev/null -w '%{http_code}' -A kube-probe/1.0)
    ((tmo > 0)) && args+=(--max-time "$tmo")
    while (($# >= 2)); do
      # curl leaves out a header whose value is blank; "Name;" is its form for sending one empty.
      if [[ -z ${2//[ $'\t']/} ]]; then args+=(-H "$1;"); else args+=(-H "$1: $2"); fi
      shift 2
    done
    code=$("$CURL" "${args[@]}" "${scheme,,}://$h:$port$path" 2>/dev/null </dev/null)
    [[ $code =~ ^[23][0-9][0-9]$ ]]
  elif [[ $scheme == HTTPS ]]; then
    wlog "an HTTPS probe needs curl, which this machine lacks: counted as a failure"
    return 1
  else
    local tl=()
    ((tmo > 0)) && tl=(timeout -k 1 "$tmo")
    ${tl[@]+"${tl[@]}"} "$BASH" -c "$(declare -f devtcp_get); devtcp_get \"\$@\"" devtcp "$host" "$port" "$path" "$@" </dev/null
  fi
}

# run_handler <timeout (0: none)> <kind> <args...>: exec | httpGet | tcpSocket | sleep.
run_handler() {
  local tmo=$1 kind=$2 tl=()
  shift 2
  ((tmo > 0)) && tl=(timeout -k 2 "$tmo")
  case $kind in
    exec)
      if [[ $C_IMAGE_KIND == host ]]; then
        (cd -- "${C_WORKDIR:-$SANDBOX}" && host_exec ${tl[@]+"${tl[@]}"} -- "$@") </dev/null
      else
        (in_root ${tl[@]+"${tl[@]}"} "$RT" exec ${EXEC_FLAGS[@]+"${EXEC_FLAGS[@]}"} "instance://$INST" ${CTR_ENV[@]+"${CTR_ENV[@]}"} "$@") </dev/null
      fi ;;
    httpGet) http_get "$tmo" "$@" ;;
    tcpSocket)
      # shellcheck disable=SC2016 # $1 and $2 are the inner bash's arguments
      ${tl[@]+"${tl[@]}"} "$BASH" -c 'exec 3<>"/dev/tcp/$1/$2"' tcp "$1" "$2" </dev/null ;;
    sleep) sleep "$1" ;;
    *) wlog "unknown handler $kind"; return 1 ;;
  esac
}

# probe_loop <startup|readiness|liveness> <delay> <period> <timeout> <success> <failure> <grace> <handler...>
# Runs in the background for one run of the container; results are files in .wrapper/ (a failed
# startup or liveness probe writes the grace period its kill gets, then the runtime's line when it
# could not start the probe's command).
probe_loop() {
  local kind=$1 delay=$2 period=$3 tmo=$4 sthr=$5 fthr=$6 grace=$7 ok=0 bad=0 ready=-1 t0 left pause rc
  local out=$RUN_DIR/$C_KEY.$1.out
  shift 7
  trap - TERM INT
  WHO="$C_KEY $kind"
  now_ms
  while ((NOW_MS < STARTED_MS + delay * 1000)); do nap "$TICK"; now_ms; done
  # The kubelet runs postStart inside the start of the container and probes only a container it
  # has seen running after that (docs/pod-to-job.md#probes-and-hooks): no probe while the hook runs.
  if ((${#C_POST_START[@]})); then
    until [[ -e $RUN_DIR/$C_KEY.poststart-done ]]; do nap "$TICK"; done
  fi
  if [[ $kind != startup ]] && ((${#C_STARTUP_PROBE[@]})); then
    until [[ -e $RUN_DIR/$C_KEY.startup-ok ]]; do nap "$TICK"; done
  fi
  while :; do
    now_ms
    t0=$NOW_MS
    if run_handler "$tmo" "$@" >"$out" 2>&1; then
      ((++ok)); bad=0
    else
      rc=$?
      ((++bad)); ok=0
      # A readiness probe kills nothing: no message to find for it.
      WHY=''
      [[ $kind != readiness ]] && handler_not_started "$rc" "$out" "$@"
      wlog "probe failed ($bad/$fthr)${WHY:+: the runtime could not start it: $WHY}"
    fi
    case $kind in
      startup)
        if ((ok >= sthr)); then : >"$RUN_DIR/$C_KEY.startup-ok"; exit 0; fi
        if ((bad >= fthr)); then printf '%s\n' "$grace" "$WHY" >"$RUN_DIR/$C_KEY.startup-failed"; exit 0; fi ;;
      liveness)
        if ((bad >= fthr)); then printf '%s\n' "$grace" "$WHY" >"$RUN_DIR/$C_KEY.liveness-failed"; exit 0; fi ;;
      readiness)
        if ((ok >= sthr && ready != 1)); then
          ready=1
          echo 1 >"$RUN_DIR/$C_KEY.ready.tmp" && mv -f -- "$RUN_DIR/$C_KEY.ready.tmp" "$RUN_DIR/$C_KEY.ready"
        elif ((bad >= fthr && ready != 0)); then
          ready=0
          echo 0 >"$RUN_DIR/$C_KEY.ready.tmp" && mv -f -- "$RUN_DIR/$C_KEY.ready.tmp" "$RUN_DIR/$C_KEY.ready"
        fi ;;
    esac
    # periodSeconds runs from the start of one probe to the start of the next, as the kubelet's.
    now_ms
    left=$((t0 + period * 1000 - NOW_MS))
    if ((left > 0)); then
      printf -v pause '%d.%03d' $((left / 1000)) $((left % 1000))
      nap "$pause"
    fi
  done
}

# ---- one container: its supervisor -----------------------------------------------------------

# Reads env/<key>.env (NUL-separated NAME=value records, byte for byte) into ENV_PAIRS, adds the
# slot's variables the pod does not set, and builds what carries them: RT_ENV (APPTAINERENV_<NAME>,
# exported for the runtime by in_root), CTR_ENV (a command prefix, "env -- NAME=value ...", for
# names that are not shell identifiers: Kubernetes allows any printable ASCII but '=', Apptainer's
# action script keeps only identifiers) and HOST_ENV (a host container's whole environment, see
# host_exec). Values travel in environments, which only this job's user can read; CTR_ENV is on a
# command line, which every user of the worker can, and the plan lets only literal values of the
# pod spec reach it (never a secret's or a configMap's).
load_env() {
  local file=$SANDBOX/env/$C_KEY.env rec n names=$'\n' odd=()
  ENV_PAIRS=()
  if [[ -f $file ]]; then
    while IFS= read -r -d '' rec || [[ -n $rec ]]; do
      [[ $rec == ?*=* ]] || { wlog "ignoring a malformed record in $file"; continue; }
      ENV_PAIRS+=("$rec")
      # Names are printable: a newline cannot be part of one.
      names+="${rec%%=*}"$'\n'
    done <"$file"
  fi
  for n in ${SLOT_ENV_NAMES[@]+"${SLOT_ENV_NAMES[@]}"}; do
    [[ $names == *$'\n'"$n"$'\n'* ]] || ENV_PAIRS+=("$n=${!n-}")
  done
  if [[ -n $POD_IP && $names != *$'\n'POD_IP$'\n'* ]]; then ENV_PAIRS+=("POD_IP=$POD_IP"); fi
  RT_ENV=() CTR_ENV=()
  for rec in ${ENV_PAIRS[@]+"${ENV_PAIRS[@]}"}; do
    if [[ ${rec%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then RT_ENV+=("$RT_ENV_PREFIX$rec"); else odd+=("$rec"); fi
  done
  ((${#odd[@]})) && CTR_ENV=(env -- "${odd[@]}")
  HOST_ENV=("PATH=$WRAPPER_PATH" "HOME=${HOME:-$SANDBOX}" "TMPDIR=$SANDBOX/tmp" ${ENV_PAIRS[@]+"${ENV_PAIRS[@]}"})
}

# Builds START_FLAGS (instance start, without the binds: see prepare_binds) and EXEC_FLAGS
# (exec/run into the instance).
build_flags() {
  # No --pid: instance start does not register it (the runtime refuses it as an unknown flag),
  # and every supported runtime gives an instance a PID namespace of its own, which every exec,
  # probe and hook joins (docs/container-runtimes.md#instances-and-the-pid-namespace). Only
  # --sharens can drop it, and that flag exists for exec/run alone, never for instance start.
  START_FLAGS=(--cleanenv) EXEC_FLAGS=(--cleanenv)
  if ((RT_NOEVAL)); then START_FLAGS+=(--no-eval) EXEC_FLAGS+=(--no-eval); fi
  ((RUNTIME_NO_HOME)) && START_FLAGS+=(--no-home)
  START_FLAGS+=(${C_GPU_FLAGS[@]+"${C_GPU_FLAGS[@]}"})
  # The pod's workingDir comes last: it wins over an allowed --pwd (the last value counts).
  EXEC_FLAGS+=(${C_EXEC_OPTIONS[@]+"${C_EXEC_OPTIONS[@]}"})
  [[ -n $C_WORKDIR ]] && EXEC_FLAGS+=(--pwd "$C_WORKDIR")
  return 0
}

# ---- mounts: resolved on the worker at the moment of use ------------------------------------
#
# The pod's own containers can change what a mount's path leads to: an init container can leave a
# symlink in an emptyDir, a container one in a writable hostPath. So right before each instance
# start (restarts included) every source and mount point is resolved and must stay inside its own
# volume's folder (a hostPath: below an allowed prefix, resolved here too); the resolved path is
# what the runtime binds. What does not exist yet is made one component at a time, each checked
# after it is made. What bash cannot close: a sibling container writing the same emptyDir can
# swap a folder for a symlink between this check and the runtime's own lookup of the path.

# resolve <name> <path>: sets the variable <name> to the path with every symlink resolved; fails
# when it does not exist. (The x keeps a name that ends in a newline whole.)
resolve() {
  local r
  r=$(realpath -e -- "$2" 2>/dev/null && echo x) || return 1
  [[ $r == *$'\nx' ]] || return 1
  printf -v "$1" '%s' "${r%$'\nx'}"
}

# inside <path> <folder>: is the path the folder itself or below it (both resolved)?
inside() {
  [[ $1 == "$2" || $1 == "${2%/}"/* ]]
}

# allowed_host <resolved path>: below one of HOST_PATH_PREFIXES, each resolved on this worker.
allowed_host() {
  local p real
  for p in ${HOST_PATH_PREFIXES[@]+"${HOST_PATH_PREFIXES[@]}"}; do
    resolve real "$p" && inside "$1" "$real" && return 0
  done
  return 1
}

# make_path <folder> <relative path> <dir|file>: makes the path below the (resolved) folder, one
# component at a time and never through a symlink: each is made in the folder just entered (this
# subshell's working directory, which no rename elsewhere can move), then entered only when it
# resolves to itself; the last one of a file with O_EXCL (set -C), which never follows a symlink.
# An existing component must be a plain folder (the last one a file, for <file>). Prints why and
# fails when it cannot.
make_path() {
  (
    here=$1 rest=$2
    if ! cd -P -- "$here" 2>/dev/null || [[ $PWD != "$here" ]]; then
      printf '%s is not a plain folder' "$here"
      exit 1
    fi
    while [[ -n $rest ]]; do
      part=${rest%%/*}
      if [[ $rest == */* ]]; then rest=${rest#*/}; else rest=''; fi
      [[ -z $part || $part == . ]] && continue
      [[ $part == .. ]] && { printf '%s contains ..' "$2"; exit 1; }
      if [[ -z $rest && $3 == file ]]; then
        [[ -e $part || -L $part ]] || (set -C && : >"$part") 2>/dev/null
        [[ -f $part && ! -L $part ]] || { printf '%s/%s is not a plain file' "$here" "$part"; exit 1; }
        exit 0
      fi
      [[ -e $part || -L $part ]] || mkdir -- "$part" 2>/dev/null
      if [[ -d $part && ! -L $part ]] && cd -P -- "$part" 2>/dev/null && [[ $PWD == "${here%/}/$part" ]]; then
        here=$PWD
      else
        printf '%s/%s is not a plain folder' "$here" "$part"
        exit 1
      fi
    done
  )
}

# mount_source <kind> <volume folder> <subPath>: SRC = the source to bind, resolved now; fails
# with WHY.
mount_source() {
  local kind=$1 root=$2 sub=$3 base
  if [[ $kind == sandbox ]]; then
    # The volume's folder is the wrapper's own (emptydir/<name>, volumes/<name>): no symlink on the way.
    if ! resolve base "$SANDBOX/$root" || [[ $base != "$SANDBOX/$root" || ! -d $base ]]; then
      WHY="$root is not a plain folder of the job's sandbox"
      return 1
    fi
  else
    resolve base "$root" || { WHY="hostPath $root does not exist on this worker"; return 1; }
    allowed_host "$base" || { WHY="hostPath $root resolves to $base, which is not below an allowed prefix"; return 1; }
  fi
  SRC=$base
  if [[ -n $sub ]]; then
    if [[ $kind == sandbox && ! -e $base/$sub && ! -L $base/$sub ]]; then
      wlog "creating the missing mount source $root/$sub"
      WHY=$(make_path "$base" "$sub" dir) || { WHY="cannot create subPath $sub in $root: $WHY"; return 1; }
    fi
    resolve SRC "$base/$sub" || { WHY="subPath $sub of $root does not exist (or is a dangling symlink)"; return 1; }
    inside "$SRC" "$base" || { WHY="subPath $sub of $root resolves to $SRC, outside its volume"; return 1; }
  fi
  # --bind is a CSV list of src:dst[:opts]: a resolved name may not add fields.
  [[ $SRC != *[:,\"$'\n\r']* ]] || { WHY="$SRC: a path with ':', ',', '\"' or a line break cannot be bound"; return 1; }
  return 0
}

# prepare_binds: BIND_FLAGS = the --bind of /tmp and of every mount, checked now (see above);
# fails with WHY when one may not be bound.
prepare_binds() {
  local i j dst pdst kind type
  local -a srcs=()
  BIND_FLAGS=() WHY=''
  # Binds are made in order and C_MOUNTS is parent first: /tmp comes before the pod's mounts, so
  # that a volume at /tmp or below it is not hidden.
  if ! resolve SRC "$SANDBOX/tmp" || [[ $SRC != "$SANDBOX/tmp" || ! -d $SRC ]]; then
    WHY="tmp is not a plain folder of the job's sandbox"
    return 1
  fi
  BIND_FLAGS+=(--bind "$SRC:/tmp")
  for ((i = 0; i + 4 < ${#C_MOUNTS[@]}; i += 5)); do
    kind=${C_MOUNTS[i]} dst=${C_MOUNTS[i + 3]}
    mount_source "$kind" "${C_MOUNTS[i + 1]}" "${C_MOUNTS[i + 2]}" || { WHY="cannot mount $dst: $WHY"; return 1; }
    srcs[i]=$SRC
    # A mount nested in an earlier one needs its mount point inside the innermost such one's
    # source, where that bind shows it (as the kubelet's runtime creates it); only in sources of
    # the sandbox, never on the host.
    for ((j = i - 5; j >= 0; j -= 5)); do
      pdst=${C_MOUNTS[j + 3]}
      [[ $pdst != / && $dst == "$pdst"/* ]] || continue
      if [[ ${C_MOUNTS[j]} == sandbox ]]; then
        type='file'
        [[ -d $SRC ]] && type='dir'
        WHY=$(make_path "${srcs[j]}" "${dst#"$pdst"/}" "$type") || { WHY="cannot make the mount point of $dst: $WHY"; return 1; }
      fi
      break
    done
    BIND_FLAGS+=(--bind "$SRC:$dst$([[ ${C_MOUNTS[i + 4]} == ro ]] && echo :ro)")
  done
  return 0
}

stop_requested() {
  if ((STOP_REQ)) || [[ -e $RUN_DIR/stop ]]; then
    if [[ -z $STOP_REASON ]]; then
      read -r STOP_REASON <"$RUN_DIR/stop" 2>/dev/null
      [[ $STOP_REASON =~ ^[A-Za-z]+$ ]] || STOP_REASON=Killed
    fi
    return 0
  fi
  return 1
}

# in_root <command...>: execs a command (the runtime, or timeout and the runtime) from /, with the
# container's variables (RT_ENV) exported: they reach the runtime in its environment, which only
# this job's user can read, never on a command line, which every user of the worker can. Call it in
# a subshell. From /: Apptainer binds the caller's working directory into the container (all but /
# and a few system directories), and the sandbox holds every container's env file: the runtime is
# never started from there. A container without workingDir then starts in /, as the image's
# default would be, not in the sandbox.
in_root() {
  local rec
  for rec in ${RT_ENV[@]+"${RT_ENV[@]}"}; do export "${rec?}"; done
  cd / && exec "$@"
}

# bash_own_variable <name>: a variable bash keeps for itself (core/types.ts, BASH_OWN_VARIABLES,
# lists the same): exported with another value, it arrives replaced or not at all.
# shellcheck disable=SC2317 # exec_with_env runs it in a child bash
bash_own_variable() {
  case $1 in
    UID | EUID | PPID | BASHOPTS | SHELLOPTS | RANDOM | SRANDOM | SECONDS | LINENO | HISTCMD | BASHPID | \
      EPOCHSECONDS | EPOCHREALTIME | FUNCNAME | GROUPS | DIRSTACK | OPTIND | SHLVL | _ | BASH_*) return 0 ;;
  esac
  return 1
}

# exec_with_env <env program> <command...>: execs the command with exactly the NAME=value records
# read from fd 3 (NUL-terminated) as its environment. Run by a bash started with env -i (see
# host_exec), so that nothing else is in it; the exports use positional parameters only, so that
# no record can overwrite a variable of this function. Names bash cannot export (not shell
# identifiers, or its own variables) can only go through env's arguments; the plan lets only
# literal values of the pod spec have such names.
# shellcheck disable=SC2317 # host_exec runs it by name in a child bash
exec_with_env() {
  local -a records=() odd=() final=()
  unset PWD OLDPWD SHLVL
  mapfile -d '' -t records <&3
  exec 3<&-
  set -- "${records[@]}" -- "$@"
  records=()
  while [[ $1 != -- ]]; do
    if [[ ${1%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && ! bash_own_variable "${1%%=*}"; then records+=("$1"); else odd+=("$1"); fi
    shift
  done
  shift
  # $1 is the env program: bash puts SHLVL back into every program it execs, env takes it out
  # (or sets the pod's own) and sets the names bash cannot export.
  final=("$1" -u SHLVL -- ${odd[@]+"${odd[@]}"} "${@:2}")
  set -- "${#records[@]}" "${records[@]}" "${final[@]}"
  unset records odd final
  while (($1 > 0)); do
    export "${2?}"
    set -- "$(($1 - 1))" "${@:3}"
  done
  shift
  exec "$@"
}

# host_exec [prefix...] -- <command...>: execs a host container's command (after a prefix such as
# timeout) with exactly HOST_ENV as its environment, through a pipe, never on a command line.
# Call it in a subshell, in the container's working folder.
host_exec() {
  local -a pre=()
  while [[ $1 != -- ]]; do pre+=("$1"); shift; done
  shift
  exec ${pre[@]+"${pre[@]}"} env -i "$BASH" -c "$(declare -f bash_own_variable exec_with_env); exec_with_env \"\$@\"" \
    exec_with_env "$(type -P env)" "$@" 3< <(printf '%s\0' ${HOST_ENV[@]+"${HOST_ENV[@]}"})
}

# watched <label> <command...>: runs a command in the background, killing it on a stop. Its
# output goes to wrapper.log when it ends, and the line that says why it failed to WATCHED_WHY,
# for the container's status (docs/status.md#why-a-container-did-not-start): the runtime's first
# `FATAL:` line (a fatal error ends the process that prints it; the runtime's parent process
# prints a later, vaguer one when its child died), else its usage error (`Error for command …`,
# or cobra's `Error: …` for an unknown command), else its last `ERROR:` line, else its last
# non-blank line. The runtime prints these prefixes without colour since stderr is a file.
watched() {
  local label=$1 pid rc line file=$RUN_DIR/watched.$BASHPID fatal='' usage='' error='' last=''
  shift
  WATCHED_WHY=''
  "$@" </dev/null >"$file" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    stop_requested && kill -TERM "$pid" 2>/dev/null
    nap "$TICK"
  done
  wait "$pid"
  rc=$?
  while IFS= read -r line || [[ -n $line ]]; do
    stamp
    printf '%s %s: %s\n' "$TS" "$label" "$line" >>"$WLOG"
    [[ -n ${line//[[:space:]]/} ]] || continue
    last=${line:0:1024}
    case $line in
      FATAL:*) [[ -n $fatal ]] || fatal=$last ;;
      'Error for command '* | 'Error: '*) usage=$last ;;
      ERROR:*) error=$last ;;
    esac
  done <"$file"
  WATCHED_WHY=${fatal:-${usage:-${error:-$last}}}
  rm -f -- "$file"
  return "$rc"
}

# ---- a command the runtime could not start (docs/container-runtimes.md#a-command-that-cannot-start)
#
# When the runtime cannot start a command in the instance (not found, not executable), it prints
# one FATAL: line and exits 255, from the very process that would have become the program, on the
# same stderr. A program that prints that line and exits 255 looks the same. What tells them apart
# is asking the runtime again in a way that cannot start the program: with one more variable,
# longer than the kernel passes to any program. A runtime that cannot find the command fails with
# the same line; one that finds it execs it, and the kernel refuses that exec (E2BIG), which the
# runtime reports with another line.

# check_bytes: CHECK_BYTES = the length of that variable's value, the kernel's MAX_ARG_STRLEN (32
# pages), or empty (no check) when it is longer than the runtime's engine configuration, which
# carries the variable to the container, can hold (1 MiB): with pages over 16 KiB.
check_bytes() {
  local k v _
  CHECK_BYTES=''
  while read -r k v _; do
    if [[ $k == KernelPageSize: ]]; then
      [[ $v =~ ^[0-9]+$ ]] && ((v <= 16)) && CHECK_BYTES=$((v * 1024 * 32))
      break
    fi
  done 2>/dev/null </proc/self/smaps
  [[ -n $CHECK_BYTES ]] || wlog "page size over 16 KiB or unknown: a command the runtime cannot start reads as its exit code"
  return 0
}

# first_fatal <file> [stamped]: FATAL_LINE = the first line starting FATAL: in the first 64 KiB of
# the file (after each line's timestamp, for a container log); fails when there is none.
first_fatal() {
  local line
  FATAL_LINE=''
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -n ${2:-} ]] && line=${line#* }
    if [[ $line == FATAL:* ]]; then
      FATAL_LINE=${line:0:1024}
      return 0
    fi
  done < <(head -c 65536 -- "$1" 2>/dev/null)
  return 1
}

# not_started <line> <exec|run> <words after instance://…>: 0 when the runtime could not start this
# command in the instance and printed the line for it (see above). The check runs the same exec or
# run with the same flags, plus an --env-file with the long variable, after a copy of the
# container's own env file: up to Apptainer 1.3 and SingularityCE 4.1 the flag keeps one value, so
# ours replaces that file (and a file named by the runtime's variable); later releases read every
# file on its own, where the copy changes nothing.
not_started() {
  local line=$1 mode=$2 env_file=$RUN_DIR/$C_KEY.check.$BASHPID.env src='' w rc
  shift 2
  [[ $line == FATAL:* && $C_IMAGE_KIND != host && -n ${CHECK_BYTES:-} ]] || return 1
  # The container's own --env-file can only come from its singularity options, each one word,
  # `--flag=value` (core/plan/annotations.ts). Not from the rest of EXEC_FLAGS: --pwd's value is
  # the pod's workingDir, which may look like a flag but is none to the runtime.
  for w in ${C_EXEC_OPTIONS[@]+"${C_EXEC_OPTIONS[@]}"}; do
    [[ $w == --env-file=* ]] && src=${w#*=}
  done
  # Without the flag, the runtime reads the file named by its variable ([APPTAINER|SINGULARITY]_ENV_FILE).
  if [[ -z $src && $RT_ENV_PREFIX == APPTAINERENV_ ]]; then src=${APPTAINER_ENV_FILE:-${SINGULARITY_ENV_FILE:-}}; fi
  [[ -n $src ]] || src=${SINGULARITY_ENV_FILE:-}
  # The runtime runs from / (in_root).
  [[ -z $src || $src == /* ]] || src=/$src
  if ! {
    if [[ -f $src ]]; then cat -- "$src" && echo; fi &&
      printf 'SIDECAR_START_CHECK=' && head -c "$CHECK_BYTES" /dev/zero | tr '\0' x && echo
  } >"$env_file" 2>/dev/null; then
    wlog "cannot write $env_file: the runtime's line is taken for the program's"
    rm -f -- "$env_file"
    return 1
  fi
  watched "$C_KEY start check" in_root timeout -k 2 60 "$RT" "$mode" ${EXEC_FLAGS[@]+"${EXEC_FLAGS[@]}"} \
    --env-file "$env_file" "instance://$INST" "$@"
  rc=$?
  rm -f -- "$env_file"
  ((rc == 255)) && [[ $WATCHED_WHY == "$line" ]]
}

# handler_not_started <exit code> <output file> <handler...>: WHY = the runtime's line when an exec
# handler's command could not start in the instance, else empty (and fails).
handler_not_started() {
  local rc=$1 out=$2
  shift 2
  WHY=''
  ((rc == 255)) && [[ $1 == exec ]] && first_fatal "$out" || return 1
  not_started "$FATAL_LINE" exec ${CTR_ENV[@]+"${CTR_ENV[@]}"} "${@:2}" || return 1
  WHY=$FATAL_LINE
}

# Starts the container's main process (and its logger) in the background: MAIN_PID, LOGGER_PID.
launch_main() {
  local log=$LOG_DIR/$C_KEY.log fifo=$RUN_DIR/$C_KEY.fifo argv=()
  [[ -p $fifo ]] || mkfifo -- "$fifo"
  (
    trap '' TERM INT
    exec <"$fifo"
    log_lines >>"$log"
  ) &
  LOGGER_PID=$!
  if [[ $C_IMAGE_KIND == host ]]; then
    # host:<site>: the site is the program's first argument (as in the original plugin), right
    # after the command (or after the first argument when only args are given).
    if ((${#C_COMMAND[@]})); then
      argv=("${C_COMMAND[@]}" ${C_HOST_SITE:+"$C_HOST_SITE"} ${C_ARGS[@]+"${C_ARGS[@]}"})
    elif ((${#C_ARGS[@]})); then
      argv=("${C_ARGS[0]}" ${C_HOST_SITE:+"$C_HOST_SITE"} "${C_ARGS[@]:1}")
    fi
    (
      [[ -n ${NAP_FD:-} ]] && exec {NAP_FD}>&-
      ((${#argv[@]})) || { echo "host container $C_NAME has no command" >&2; exit 127; }
      cd -- "${C_WORKDIR:-$SANDBOX}" || exit 127
      host_exec -- "${argv[@]}"
    ) </dev/null >"$fifo" 2>&1 &
  else
    # MAIN_CHECK: the same exec or run for not_started.
    if ((${#C_COMMAND[@]})); then
      MAIN_CHECK=(exec ${CTR_ENV[@]+"${CTR_ENV[@]}"} "${C_COMMAND[@]}" ${C_ARGS[@]+"${C_ARGS[@]}"})
    else
      # The plan gives a container without a command only shell-identifier names (see load_env).
      ((${#CTR_ENV[@]})) && wlog "variables whose names are not shell identifiers cannot reach the image's entrypoint"
      MAIN_CHECK=(run ${C_ARGS[@]+"${C_ARGS[@]}"})
    fi
    argv=("$RT" "${MAIN_CHECK[0]}" ${EXEC_FLAGS[@]+"${EXEC_FLAGS[@]}"} "instance://$INST" "${MAIN_CHECK[@]:1}")
    (
      [[ -n ${NAP_FD:-} ]] && exec {NAP_FD}>&-
      in_root "${argv[@]}"
    ) </dev/null >"$fifo" 2>&1 &
  fi
  MAIN_PID=$!
}

# stop_main [grace]: stops the main process within the grace period (the pod's by default):
# preStop, SIGTERM, SIGKILL when time is up.
stop_main() {
  local deadline grace=${1:-$GRACE_SECONDS}
  now_ms
  deadline=$((NOW_MS + grace * 1000))
  if ((${#C_PRE_STOP[@]})); then
    wlog "preStop: running"
    run_handler "$((grace > 0 ? grace : 1))" "${C_PRE_STOP[@]}" > >(log_lines_as "$C_KEY preStop" >>"$WLOG") 2>&1
    wlog "preStop: exit $?"
  fi
  SENT_SIGNAL=15
  kill -TERM "$MAIN_PID" 2>/dev/null
  now_ms
  while kill -0 "$MAIN_PID" 2>/dev/null && ((NOW_MS < deadline)); do
    nap 0.1
    now_ms
  done
  if kill -0 "$MAIN_PID" 2>/dev/null; then
    wlog "still running after the grace period: SIGKILL"
    SENT_SIGNAL=9
    kill -KILL "$MAIN_PID" 2>/dev/null
  fi
}

# One run of the container, from instance start to its end. Sets RC and END_REASON.
run_once() {
  local pids=() v p stopflags=(-t 2)
  rm -f -- "$RUN_DIR/$C_KEY".startup-ok "$RUN_DIR/$C_KEY".startup-failed "$RUN_DIR/$C_KEY".liveness-failed \
    "$RUN_DIR/$C_KEY".ready "$RUN_DIR/$C_KEY".poststart-failed "$RUN_DIR/$C_KEY".poststart-done
  KILL_REASON='' SENT_SIGNAL='' END_REASON='' RC=0 S_MESSAGE='' START_WHY=''
  if [[ $C_IMAGE_KIND != host ]]; then
    if ! prepare_binds; then
      # The kubelet would leave the container waiting; a batch slot must end, so it ends as a
      # failed run and the restart policy decides what follows.
      wlog "not starting the container: $WHY"
      now
      S_STARTED=$NOW S_FINISHED=$NOW END_REASON=CreateContainerConfigError RC=1 S_MESSAGE=$WHY
      return 0
    fi
    wlog "instance start $INST"
    watched "$C_KEY runtime" in_root "$RT" instance start "${START_FLAGS[@]}" \
      "${BIND_FLAGS[@]}" ${C_RUNTIME_OPTIONS[@]+"${C_RUNTIME_OPTIONS[@]}"} "$C_IMAGE" "$INST"
    RC=$?
    if ((RC != 0)); then
      wlog "instance start failed (exit $RC)"
      now
      S_STARTED=$NOW S_FINISHED=$NOW END_REASON=StartError S_MESSAGE=$WATCHED_WHY
      if stop_requested; then
        END_REASON=$STOP_REASON RC=143
        timeout -k 2 30 "$RT" instance stop -F "$INST" </dev/null >/dev/null 2>&1
      fi
      return 0
    fi
  fi
  now
  now_ms
  STARTED_MS=$NOW_MS
  S_STATE=running S_REASON='' S_EXIT='' S_STARTED=$NOW S_FINISHED='' S_SIGNAL='' S_READY=0
  ((${#C_READINESS_PROBE[@]} == 0 && ${#C_STARTUP_PROBE[@]} == 0)) && S_READY=1
  launch_main
  report
  if ((${#C_POST_START[@]})); then
    (
      trap - TERM INT
      out=$RUN_DIR/$C_KEY.poststart.out
      rm -f -- "$out.done"
      # The output goes to wrapper.log as it comes, and to a file for handler_not_started.
      run_handler 0 "${C_POST_START[@]}" > >(tee -- "$out" | log_lines_as "$C_KEY postStart" >>"$WLOG"; : >"$out.done") 2>&1
      rc=$?
      if ((rc == 0)); then
        WHO=$C_KEY wlog "postStart: done"
        : >"$RUN_DIR/$C_KEY.poststart-done"
      else
        for ((v = 0; v < 20; v++)); do [[ -e $out.done ]] && break; nap 0.1; done
        handler_not_started "$rc" "$out" "${C_POST_START[@]}" && WHO=$C_KEY wlog "postStart: cannot start: $WHY"
        WHO=$C_KEY wlog "postStart: failed"
        # The file's line: why, when the runtime could not start the hook (the container's message).
        printf '%s\n' "$WHY" >"$RUN_DIR/$C_KEY.poststart-failed"
      fi
    ) &
    pids+=($!)
  fi
  if ((${#C_STARTUP_PROBE[@]})); then probe_loop startup "${C_STARTUP_PROBE[@]}" & pids+=($!); fi
  if ((${#C_READINESS_PROBE[@]})); then probe_loop readiness "${C_READINESS_PROBE[@]}" & pids+=($!); fi
  if ((${#C_LIVENESS_PROBE[@]})); then probe_loop liveness "${C_LIVENESS_PROBE[@]}" & pids+=($!); fi

  while kill -0 "$MAIN_PID" 2>/dev/null; do
    if stop_requested; then
      END_REASON=$STOP_REASON
      stop_main
      break
    fi
    for v in startup-failed:StartupProbeFailed liveness-failed:LivenessProbeFailed poststart-failed:PostStartHookError; do
      if [[ -e $RUN_DIR/$C_KEY.${v%%:*} ]]; then KILL_REASON=${v#*:}; break; fi
    done
    if [[ -n $KILL_REASON ]]; then
      # A failed probe's file holds its grace period (the probe's own, else the pod's), then the
      # runtime's line when it could not start the probe's command (a hook's file: that line alone).
      p='' S_MESSAGE=''
      if [[ $KILL_REASON == PostStartHookError ]]; then
        read -r S_MESSAGE <"$RUN_DIR/$C_KEY.${v%%:*}" 2>/dev/null
      else
        { read -r p && read -r S_MESSAGE; } <"$RUN_DIR/$C_KEY.${v%%:*}" 2>/dev/null
      fi
      [[ $p =~ ^[0-9]+$ ]] || p=$GRACE_SECONDS
      wlog "stopping the container: $KILL_REASON (grace ${p}s)"
      stop_main "$p"
      break
    fi
    v=$S_READY
    if ((${#C_READINESS_PROBE[@]})); then
      [[ -e $RUN_DIR/$C_KEY.ready ]] && read -r v <"$RUN_DIR/$C_KEY.ready"
    elif ((${#C_STARTUP_PROBE[@]})); then
      [[ -e $RUN_DIR/$C_KEY.startup-ok ]] && v=1
    fi
    if [[ $v != "$S_READY" ]]; then
      S_READY=$v
      report
    fi
    nap "$TICK"
  done
  wait "$MAIN_PID"
  RC=$?
  now
  S_FINISHED=$NOW
  for p in ${pids[@]+"${pids[@]}"}; do kill -TERM "$p" 2>/dev/null; done
  # Exit 255 by itself: did the runtime fail to start the command? Asked while the instance runs.
  if ((RC == 255)) && [[ $C_IMAGE_KIND != host && -z $KILL_REASON && -z $SENT_SIGNAL ]]; then
    drain_log
    if first_fatal "$LOG_DIR/$C_KEY.log" stamped && not_started "$FATAL_LINE" "${MAIN_CHECK[@]}"; then
      START_WHY=$FATAL_LINE
      wlog "the runtime could not start the command: $START_WHY"
    fi
  fi
  if [[ $C_IMAGE_KIND != host ]]; then
    # Ends what the container left behind (after a SIGKILL at once).
    [[ $SENT_SIGNAL == 9 ]] && stopflags=(-F)
    timeout -k 2 30 "$RT" instance stop "${stopflags[@]}" "$INST" </dev/null > >(log_lines_as "$C_KEY runtime" >>"$WLOG") 2>&1 ||
      wlog "instance stop $INST failed"
  fi
  end_run
}

# drain_log: waits until the container's log is complete: every writer has closed the FIFO.
drain_log() {
  local v
  for ((v = 0; v < 20; v++)); do
    kill -0 "$LOGGER_PID" 2>/dev/null || break
    nap 0.1
  done
  kill -KILL "$LOGGER_PID" 2>/dev/null
  wait "$LOGGER_PID" 2>/dev/null
}

# end_run: once the main process has ended (RC), waits until its log is complete and sets
# END_REASON (and S_SIGNAL when the wrapper's signal ended it).
end_run() {
  local by_signal=0
  drain_log
  # Why it ended: a probe or hook (KILL_REASON), the pod's stop (Killed when our signal ended
  # it; DeadlineExceeded), the runtime that could not start the command (StartError, exit code 128
  # and the runtime's line, as the kubelet reports a container whose command cannot start), or by
  # itself (Completed or Error).
  if [[ -n $SENT_SIGNAL ]] && ((RC == 128 + SENT_SIGNAL)); then by_signal=1 S_SIGNAL=$SENT_SIGNAL; fi
  if [[ -n ${START_WHY:-} ]]; then
    END_REASON=StartError RC=128 S_MESSAGE=$START_WHY
  elif [[ -n $KILL_REASON ]]; then
    END_REASON=$KILL_REASON
  elif [[ $END_REASON == DeadlineExceeded || ($END_REASON == Killed && $by_signal == 1) ]]; then
    :
  elif ((RC == 0)); then
    END_REASON=Completed
  else
    END_REASON=Error
  fi
  wlog "exited with $RC ($END_REASON)"
  # SIGKILL that the wrapper did not send: the kernel's, most often its OOM killer.
  if ((RC == 137 && by_signal == 0)) && [[ $END_REASON == Error ]]; then keep_log "$C_KEY"; fi
}

# run_container <plan function>: the supervisor (runs as a subshell); exits with the final code.
run_container() {
  "$1"
  WHO=$C_KEY STOP_REQ=0 STOP_REASON=
  trap 'STOP_REQ=1' TERM INT
  INST="$INSTANCE_PREFIX-$$-$C_KEY"
  reset_state
  load_env
  build_flags
  local backoff end
  while :; do
    run_once
    local restart=0
    if ! stop_requested; then
      case $RESTART_POLICY in
        OnFailure) ((RC != 0)) && restart=1 ;;
        Always) ((RC != 0 || (RESTART_AFTER_SUCCESS && !C_INIT))) && restart=1 ;;
      esac
      if ((restart && S_RESTARTS >= MAX_RESTARTS)); then
        wlog "not restarting: $S_RESTARTS restarts already (limit $MAX_RESTARTS)"
        restart=0
      fi
    fi
    if ((!restart)); then
      S_STATE=terminated S_REASON=$END_REASON S_EXIT=$RC S_READY=0
      report
      exit "$RC"
    fi
    L_EXIT=$RC L_REASON=$END_REASON L_STARTED=$S_STARTED L_FINISHED=$S_FINISHED
    ((S_RESTARTS++))
    S_STATE=waiting S_REASON=CrashLoopBackOff S_EXIT='' S_STARTED='' S_FINISHED='' S_READY=0 S_SIGNAL=''
    mv -f -- "$LOG_DIR/$C_KEY.log" "$LOG_DIR/$C_KEY.prev.log" && : >"$LOG_DIR/$C_KEY.log"
    backoff=$BACKOFF_INITIAL_SECONDS
    for ((end = 1; end < S_RESTARTS && backoff < BACKOFF_MAX_SECONDS; end++)); do ((backoff *= 2)); done
    ((backoff > BACKOFF_MAX_SECONDS)) && backoff=$BACKOFF_MAX_SECONDS
    report
    wlog "restart $S_RESTARTS in ${backoff}s"
    now_ms
    end=$((NOW_MS + backoff * 1000))
    while ((NOW_MS < end)) && ! stop_requested; do
      nap "$TICK"
      now_ms
    done
    if stop_requested; then
      # Stopped while waiting: the container stays as its last run ended.
      S_STATE=terminated S_REASON=$L_REASON S_EXIT=$L_EXIT S_STARTED=$L_STARTED S_FINISHED=$L_FINISHED
      report
      exit "$L_EXIT"
    fi
    S_REASON=ContainerCreating
  done
}

# ---- interLink's job script (deliberate code channel: Channels.JobScript) ---------------------
#
# The script stands for the whole pod (docs/pod-to-job.md#the-job-script): it runs once, in the
# sandbox, outside any container, started as a host container's command is; its output is the
# first container's log. The init containers read Completed when it starts; every container reads
# running while it runs, then terminated with its exit code. No probe, hook or restart applies.

# report_all <state line> <plan function...>: the same state for each container; in a subshell,
# since loading a plan replaces the C_* variables.
report_all() (
  line=$1
  shift
  for fn in "$@"; do
    "$fn"
    WHO=$C_KEY wlog "state: $line"
    write_state "$C_KEY" "$C_ATTR" "$line"
  done
)

# script_env: HOST_ENV = the job script's whole environment, which host_exec hands it through a
# pipe, never on a command line: the job's own environment as the wrapper has it (with what
# CommandPrefix exported), HOME and TMPDIR as a host container gets them, then the first
# container's env (ENV_PAIRS, see load_env), whose values win. A name only a command line could
# carry (not a shell identifier, or a variable bash keeps for itself) is left out, as the plan
# warns (core/job-script.ts, scriptCanReceive).
script_env() {
  local rec all=()
  while IFS= read -r -d '' rec; do
    # The wrapper's shell bookkeeping: the script's own shell sets these.
    case ${rec%%=*} in PWD | OLDPWD | SHLVL | _) ;; *) all+=("$rec") ;; esac
  done < <(env -0)
  all+=("HOME=${HOME:-$SANDBOX}" "TMPDIR=$SANDBOX/tmp" ${ENV_PAIRS[@]+"${ENV_PAIRS[@]}"})
  HOST_ENV=()
  for rec in "${all[@]}"; do
    if [[ ${rec%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && ! bash_own_variable "${rec%%=*}"; then
      HOST_ENV+=("$rec")
    else
      wlog "variable ${rec%%=*} is left out: only a command line could carry its name"
    fi
  done
}

# run_job_script: the job script's supervisor (runs as a subshell, like run_container); exits
# with the script's exit code.
run_job_script() {
  WHO=script STOP_REQ=0 STOP_REASON=
  trap 'STOP_REQ=1' TERM INT
  reset_state
  now
  S_STATE=terminated S_REASON=Completed S_EXIT=0 S_STARTED=$NOW S_FINISHED=$NOW
  state_line
  report_all "$LINE" ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"}
  # The first container lends the script its env and its log; nothing of its own plan runs.
  "${CONTAINERS[0]}"
  load_env
  script_env
  C_IMAGE_KIND=host C_HOST_SITE='' C_COMMAND=("$SANDBOX/$JOB_SCRIPT") C_ARGS=() C_WORKDIR='' C_PRE_STOP=()
  KILL_REASON='' SENT_SIGNAL='' END_REASON='' RC=0 START_WHY=''
  reset_state
  now
  S_STATE=running S_REASON='' S_STARTED=$NOW S_READY=1
  wlog "starting $JOB_SCRIPT (its output goes to $C_KEY.log)"
  launch_main
  state_line
  report_all "$LINE" "${CONTAINERS[@]}"
  while kill -0 "$MAIN_PID" 2>/dev/null; do
    if stop_requested; then
      END_REASON=$STOP_REASON
      stop_main
      break
    fi
    nap "$TICK"
  done
  wait "$MAIN_PID"
  RC=$?
  now
  S_FINISHED=$NOW
  end_run
  S_STATE=terminated S_REASON=$END_REASON S_EXIT=$RC S_READY=0
  state_line
  report_all "$LINE" "${CONTAINERS[@]}"
  exit "$RC"
}

# script_pod: the pod as interLink's job script, after the snippets (main); never returns. The
# job exits with the script's exit code.
script_pod() {
  local fn
  [[ -n $STOP_REASON ]] && fail_pod "$STOP_REASON" 143
  run_job_script &
  SUP_PIDS=($!)
  wait_supervisors
  SUP_PIDS=()
  # A supervisor that died leaves no container unfinished.
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} "${CONTAINERS[@]}"; do
    "$fn"
    force_terminated "$C_KEY" "$C_ATTR" Error 137
  done
  "${CONTAINERS[0]}"
  exit_code_of "$C_KEY"
  finish "$EXIT"
}

# ---- the pod ---------------------------------------------------------------------------------

# Waits for the supervisors in SUP_PIDS while watching the deadline.
wait_supervisors() {
  local p alive
  while :; do
    alive=0
    for p in "${SUP_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    check_deadline
    nap "$TICK"
  done
  for p in "${SUP_PIDS[@]}"; do wait "$p" 2>/dev/null; done
}

# fail_pod <reason> <exit code>: every container not yet terminated is reported terminated.
fail_pod() {
  local fn
  wlog "pod fails: $1 (exit $2)"
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    force_terminated "$C_KEY" "$C_ATTR" "$1" "$2"
  done
  finish "$2"
}

# keep_work: an HTCJob's working directory (emptydir/$KEEP_WORK_DIR) comes back as work/, whole
# or not at all (docs/operator.md#output); podstate/work says which: `kept|too-big|missing
# <bytes> <files> <dropped>`. Only files and folders travel: a symlink (or FIFO, socket, device)
# the script left is deleted, never followed. HTCondor's transfer would copy a link's target from
# the execute node, and hold the job (code 12) for a link to a folder. Folders are made readable
# first, since a file the transfer cannot read holds the job as well.
keep_work() {
  [[ -n ${KEEP_WORK_DIR:-} ]] || return 0
  local src=emptydir/$KEEP_WORK_DIR bytes=0 files=0 dropped s
  { rm -rf -- work && mkdir -- work; } || { wlog "cannot prepare work/"; return 0; }
  if [[ -L $src || ! -d $src ]]; then
    printf 'missing 0 0 0\n' >podstate/work
    return 0
  fi
  chmod -R u+rwX -- "$src" 2>/dev/null
  dropped=$(find "$src" -mindepth 1 ! -type f ! -type d -printf . -delete 2>/dev/null)
  dropped=${#dropped}
  while read -r s; do
    bytes=$((bytes + s)) files=$((files + 1))
  done < <(find "$src" -mindepth 1 \( -type f -printf '%s\n' \) -o \( -type d -printf '0\n' \) 2>/dev/null)
  if ((bytes > KEEP_WORK_MAX_BYTES || files > KEEP_WORK_MAX_FILES)); then
    rm -rf -- "$src"
    printf 'too-big %d %d %d\n' "$bytes" "$files" "$dropped" >podstate/work
    wlog "the working directory is not kept: $bytes bytes in $files entries, above $KEEP_WORK_MAX_BYTES bytes or $KEEP_WORK_MAX_FILES entries"
  elif rmdir -- work && mv -- "$src" work; then
    printf 'kept %d %d %d\n' "$bytes" "$files" "$dropped" >podstate/work
    ((dropped)) && wlog "the working directory's $dropped symlink(s) or special file(s) were dropped"
  else
    mkdir -p -- work
    printf 'missing 0 0 0\n' >podstate/work
    wlog "cannot move the working directory to work/"
  fi
  return 0
}

finish() {
  stop_background
  keep_work
  [[ -n ${NAP_FD:-} ]] && exec {NAP_FD}>&-
  rm -rf -- "$RUN_DIR"
  wlog "job.sh exits with $1"
  exit "$1"
}

dummy_pod() {
  local fn code=0 end
  trap 'STOP_REASON=Killed' TERM INT
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    reset_state
    now
    S_STATE=running S_REASON='' S_STARTED=$NOW S_READY=1
    report
  done
  now_ms
  end=$((NOW_MS + DUMMY_SECONDS * 1000))
  while ((NOW_MS < end)) && [[ -z $STOP_REASON ]]; do nap "$TICK"; now_ms; done
  [[ -n $STOP_REASON ]] && code=143
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"} ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    if ((code)); then force_terminated "$C_KEY" "$C_ATTR" Killed "$code"; else force_terminated "$C_KEY" "$C_ATTR" Completed 0; fi
  done
  finish "$code"
}

main() {
  if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 2))); then
    echo "job.sh needs bash 4.2 or later, this is $BASH_VERSION" >&2
    exit 1
  fi
  wrapper_init
  trap 'request_stop Killed' TERM INT HUP
  # Before setup, which chirps the containers' first states.
  find_chirp
  setup
  ((DUMMY)) && dummy_pod

  local rc fn code
  if [[ -n $COMMAND_PREFIX ]]; then
    # What the site's setup exports (module load, PATH) reaches the wrapper, e.g. to find the runtime.
    # A snippet ended by the pod's stop has not failed: the stop reason is checked first.
    run_snippet CommandPrefix "trap 'env -0 >$(printf %q "$PWD/.wrapper/prefix.env")' EXIT"$'\n'"$COMMAND_PREFIX" ||
      { rc=$?; [[ -n $STOP_REASON ]] || fail_pod CommandPrefixFailed "$rc"; }
    [[ -n $STOP_REASON ]] && fail_pod "$STOP_REASON" 143
    import_env "$PWD/.wrapper/prefix.env"
  fi
  [[ -n $STOP_REASON ]] && fail_pod "$STOP_REASON" 143
  RT='' RT_NOEVAL=0 RT_ENV_PREFIX=APPTAINERENV_
  if needs_runtime; then
    find_runtime || fail_pod RuntimeNotFound 127
    check_bytes
    if ((!RT_NOEVAL)); then
      if [[ $OLD_RUNTIME == refuse ]]; then
        wlog "$RT does not support --no-eval (Apptainer >= 1.1, SingularityCE >= 3.10 do): refusing to run"
        fail_pod RuntimeTooOld 126
      fi
      wlog "WARNING: $RT does not support --no-eval (Apptainer >= 1.1, SingularityCE >= 3.10 do):" \
        "it will shell-evaluate environment values and run arguments"
    fi
  fi
  start_background
  for ((fn = 0; fn < ${#PRE_EXEC[@]}; fn++)); do
    run_snippet "pre-exec[$fn]" "${PRE_EXEC[fn]}" || { rc=$?; [[ -n $STOP_REASON ]] || fail_pod PreExecFailed "$rc"; }
    [[ -n $STOP_REASON ]] && fail_pod "$STOP_REASON" 143
  done
  [[ -n $JOB_SCRIPT ]] && script_pod

  # Init containers, one at a time, in order; the first failure stops the pod.
  for fn in ${INIT_CONTAINERS[@]+"${INIT_CONTAINERS[@]}"}; do
    [[ -n $STOP_REASON ]] && fail_pod "$STOP_REASON" 143
    "$fn"
    local key=$C_KEY
    run_container "$fn" &
    SUP_PIDS=($!)
    wait_supervisors
    SUP_PIDS=()
    force_terminated "$key" "$C_ATTR" Error 137
    exit_code_of "$key"
    if [[ -n $STOP_REASON ]]; then fail_pod "$STOP_REASON" "$((EXIT > 0 ? EXIT : 143))"; fi
    if ((EXIT != 0)); then
      WHO=$key wlog "init container failed with $EXIT"
      fail_pod InitContainerFailed "$EXIT"
    fi
  done

  # Then all containers together.
  for fn in ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    run_container "$fn" &
    SUP_PIDS+=($!)
  done
  ((${#SUP_PIDS[@]})) && wait_supervisors
  code=0
  for fn in ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "$fn"
    force_terminated "$C_KEY" "$C_ATTR" Error 137
    exit_code_of "$C_KEY"
    ((EXIT > code)) && code=$EXIT
  done
  finish "$code"
}
