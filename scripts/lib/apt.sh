# apt-get for the set-up scripts (scripts/kube-apiserver.sh, .ci/run); sourced, not run.
#
# A real machine runs other apt-gets: an unattended upgrade, a second CI job, a person. These
# functions wait for them, up to APT_LOCK_TIMEOUT seconds (default 900), instead of failing at once
# on their lock.
# shellcheck shell=bash

APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-900}
apt_root=()
((EUID == 0)) || apt_root=(sudo)

# apt_get <args...>: apt-get as root, non-interactive. An install waits for dpkg's lock
# (DPkg::Lock::Timeout, apt 1.9.11 and later).
apt_get() {
  "${apt_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT" "$@"
}

# apt_update: apt-get update -qq. apt does not read DPkg::Lock::Timeout for the lock of the package
# lists, which another update holds (apt 2.6 fails at once: "Could not get lock
# /var/lib/apt/lists/lock"), so the update is tried again every 5 s while a lock is what stopped it.
apt_update() {
  local deadline=$((SECONDS + APT_LOCK_TIMEOUT)) out
  until out=$(apt_get update -qq 2>&1); do
    if [[ $out != *"Could not get lock"* ]] || ((SECONDS >= deadline)); then
      printf '%s\n' "$out" >&2
      return 1
    fi
    printf 'apt-get update: another apt holds its lock; trying again in 5 s\n' >&2
    sleep 5
  done
  [[ -z $out ]] || printf '%s\n' "$out" >&2
}

# apt_install_no_start <packages...>: apt-get install -y -qq --no-install-recommends, starting none
# of the packages' services. Their maintainer scripts start them through invoke-rc.d (or
# deb-systemd-invoke), which first asks /usr/sbin/policy-rc.d; exit 101 means "not allowed". Such a
# file is put in place by apt's DPkg::Pre-Invoke hook and taken away by its Post-Invoke hook, so it
# exists only while dpkg runs for this install, under apt's lock: no other apt run sees it. A
# policy-rc.d the machine has already is left as it is, and decides. The file is recognised by its
# content: only this function's own is removed (again after apt-get, for when dpkg failed and the
# Post-Invoke hook did not run).
apt_install_no_start() {
  local policy=/usr/sbin/policy-rc.d ours rc=0
  ours=$(mktemp)
  printf '#!/bin/sh\n# htcondor-sidecar set-up (scripts/lib/apt.sh): no service starts while it installs packages.\nexit 101\n' >"$ours"
  local put take
  printf -v put '[ -e %q ] || { cp %q %q && chmod 755 %q; }' "$policy" "$ours" "$policy" "$policy"
  printf -v take '! cmp -s %q %q || rm -f %q' "$ours" "$policy" "$policy"
  apt_get -o "DPkg::Pre-Invoke::=$put" -o "DPkg::Post-Invoke::=$take" install -y -qq --no-install-recommends "$@" || rc=$?
  "${apt_root[@]}" sh -c "$take" || rc=1
  rm -f "$ours"
  return "$rc"
}
