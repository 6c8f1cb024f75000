# Gate 7 (rack-scale pools): NCCL all-reduce across two nodes of one NVL72 rack must run over multi-node NVLink
# (IMEX channels of the pool's ComputeDomain), not a network: the pods claim no NIC, so a missing NVLink path shows as
# socket bandwidth, far under the threshold. Zero wrong values, and the bus bandwidth at least MIN_NVLINK_GBPS.
. "${GATES_DIR:-/gates}/common.sh"
need torchrun
[ "${JOB_COMPLETION_INDEX}" = "0" ] || wait_for_peer
IMEX_DIR=${IMEX_DIR:-/dev/nvidia-caps-imex-channels}
ls "${IMEX_DIR}"/channel* >/dev/null 2>&1 || fail "no IMEX channel in the pod: the ComputeDomain claim gave none"
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_MNNVL_ENABLE=1 NCCL_CUMEM_ENABLE=1
torchrun --nnodes 2 --nproc-per-node "${GPUS_PER_NODE}" --node-rank "${JOB_COMPLETION_INDEX}" \
  --master-addr "$(peer)" --master-port 29500 "${GATES_DIR}/nccl_busbw.py" 2>&1 | tee ${WORK_DIR}/nvlink.log || fail "torchrun failed"
# NCCL's init line for a GPU on a multi-node NVLink fabric (src/init.cc: "MNNVL busId ... cliqueId ... state").
grep -q "MNNVL busId" ${WORK_DIR}/nvlink.log || fail "NCCL found no multi-node NVLink fabric (no MNNVL line)"
if [ "${JOB_COMPLETION_INDEX}" = "0" ]; then
  grep -q "wrong values: 0$" ${WORK_DIR}/nvlink.log || fail "all-reduce returned wrong values"
  busbw=$(awk '/^busbw GB\/s: / { v = $3; sub(";", "", v) } END { print v }' ${WORK_DIR}/nvlink.log)
  [ -n "${busbw}" ] || fail "no bus bandwidth reported"
  awk -v b="${busbw}" -v m="${MIN_NVLINK_GBPS}" 'BEGIN { exit !(b >= m) }' \
    || fail "all-reduce bus bandwidth ${busbw} GB/s is under ${MIN_NVLINK_GBPS} GB/s: not multi-node NVLink"
  pass "all-reduce across two nodes over NVLink at ${busbw} GB/s bus bandwidth with zero wrong values"
fi
pass "rank node ${JOB_COMPLETION_INDEX} on the NVLink fabric"
