#!/bin/bash
# Runs HTCondor (the image's /start.sh) and the sidecar together; when either ends, the other is
# stopped and the container exits with the first one's status, so an orchestrator restarts both.
set -u
/start.sh &
condor_pid=$!

# Wait for the schedd before the sidecar starts answering interLink's ping.
for _ in $(seq 1 60); do
  condor_q -totals >/dev/null 2>&1 && break
  sleep 1
done

# The image's config unless the arguments name another one: `docker run … htcondor-sidecar
# --listen 0.0.0.0` replaces CMD, and without a config the sidecar would look in / (the working
# directory) and try to create ./data there.
args=("$@")
has_config=0
for a in "$@"; do
  case $a in --config | --config=*) has_config=1 ;; esac
done
((has_config)) || args=(--config /etc/htcondor-sidecar/SidecarConfig.yaml "${args[@]}")

runuser -u submituser -- /usr/local/bin/htcondor-sidecar "${args[@]}" &
sidecar_pid=$!

stop() {
  kill -TERM "$sidecar_pid" "$condor_pid" 2>/dev/null
}
trap stop TERM INT

wait -n "$condor_pid" "$sidecar_pid"
status=$?
stop
wait "$sidecar_pid" "$condor_pid" 2>/dev/null
exit "$status"
