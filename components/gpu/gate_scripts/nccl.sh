# Gates 4 and 6: NCCL all-reduce across two nodes must use DMA-BUF and GPUDirect RDMA on every
# expected rail and return exactly the expected values.
. "${GATES_DIR:-/gates}/common.sh"
need torchrun
[ "${JOB_COMPLETION_INDEX}" = "0" ] || wait_for_peer
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
torchrun --nnodes 2 --nproc-per-node "${GPUS_PER_NODE}" --node-rank "${JOB_COMPLETION_INDEX}" \
  --master-addr "$(peer)" --master-port 29500 "${GATES_DIR}/nccl_allreduce.py" 2>&1 | tee ${WORK_DIR}/nccl.log || fail "torchrun failed"
grep -q "DMA-BUF is available" ${WORK_DIR}/nccl.log || fail "NCCL did not report DMA-BUF"
grep -q "GDRDMA" ${WORK_DIR}/nccl.log || fail "NCCL did not use GPUDirect RDMA (GDRDMA)"
if [ "${JOB_COMPLETION_INDEX}" = "0" ]; then
  grep -q "wrong values: 0$" ${WORK_DIR}/nccl.log || fail "all-reduce returned wrong values"
fi
# Every rail must carry GPUDirect RDMA, not just one of them (channel lines: "via NET/IB/<n>/GDRDMA").
rails=$(grep -o "NET/IB/[0-9]*/GDRDMA" ${WORK_DIR}/nccl.log | sort -u | wc -l)
[ "${rails}" -ge "${EXPECTED_RAILS}" ] || fail "NCCL used GDRDMA on ${rails} IB rails, expected ${EXPECTED_RAILS}"
pass "all-reduce over ${rails} GDRDMA rails with zero wrong values"
