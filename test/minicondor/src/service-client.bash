# minicondor: the client of the schedd's service (src/service.ts), sourced by bin/condor_q,
# bin/condor_history and libexec/condor_chirp.
#
# mc_service_call <port> <cookie> <tool> [argument...]: when the schedd answers the call, prints its
# stdout and stderr and exits with its code; otherwise returns, and the script runs the tool. Bash
# builtins only (a job may have no PATH), but for the `cat` that copies a query's stdout, of any size
# (bash reads a socket a byte at a time); a chirp's answer is a line or two, read by bash itself.
mc_service_call() {
  local port=$1 cookie=$2 tool=$3 r code e o
  shift 3
  [[ $port =~ ^[0-9]+$ ]] || return 0
  { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 0
  if printf '%s\0%s\0%s\0%s\0' "$cookie" "$tool" "$$" "$#" >&3 && { (($# == 0)) || printf '%s\0' "$@" >&3; } &&
    IFS= read -r -t 60 -d '' r <&3 && [ "$r" = minicondor ] &&
    IFS= read -r -d '' code <&3 && [[ $code =~ ^[0-9]+$ ]] && IFS= read -r -d '' e <&3; then
    printf '%s' "$e" >&2
    if [ "$tool" = condor_chirp ]; then
      IFS= read -r -d '' o <&3
      printf '%s' "$o"
    else
      command -p cat <&3
    fi
    exit "$code"
  fi
  exec 3<&-
  return 0
}
