# Shared helpers for the RDMA qualification gates (seed 004 section 7). Each gate prints
# "GATE PASS: ..." or "GATE FAIL: ..." and exits non-zero on failure, so the Job's status is the verdict.
set -uo pipefail
GATES_DIR=${GATES_DIR:-/gates}
WORK_DIR=${WORK_DIR:-/tmp}
IB_DEV_DIR=${IB_DEV_DIR:-/dev/infiniband}
IB_VERBS_SYS_DIR=${IB_VERBS_SYS_DIR:-/sys/class/infiniband_verbs}
pass() { echo "GATE PASS: $*"; exit 0; }
fail() { echo "GATE FAIL: $*"; exit 1; }
# A tool the gate needs. Not found may also mean a PATH directory this user cannot enter: the gates run as root with
# every capability dropped, so the image's permission bits apply to root too (rayproject images keep Ray, Python and
# torchrun under /home/ray, 0750 ray:users).
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  local dir error
  local IFS=:
  for dir in ${PATH}; do
    error=$(cd "${dir:-.}" 2>&1 >/dev/null)
    if [[ "${error}" == *"Permission denied"* ]]; then
      fail "$1 is not reachable: PATH directory ${dir} cannot be entered by uid ${UID} (groups ${GROUPS[*]}); add the group that owns it to the gate pods (supplemental_groups)"
    fi
  done
  fail "$1 is not in this image; set the gate image to one that ships it"
}
uverbs_count() { ls "${IB_DEV_DIR}" 2>/dev/null | grep -c '^uverbs' || true; }
# Indexed Jobs: pod 0 is the server/rank 0, reachable as <job>-0.<service>.
peer() { echo "${GATE_JOB}-0.${GATE_SERVICE}.${GATE_NAMESPACE}.svc.cluster.local"; }
wait_for_peer() {
  for _ in $(seq 1 120); do getent hosts "$(peer)" >/dev/null && return 0; sleep 2; done
  fail "peer $(peer) never became resolvable"
}
