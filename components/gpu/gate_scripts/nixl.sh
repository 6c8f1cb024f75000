# Gate 5: a NIXL GPU-memory transfer between two nodes over UCX rc_mlx5, verified element by element.
. "${GATES_DIR:-/gates}/common.sh"
need python3
# The last line of the import's error says why (not installed, no NIXL build for this CUDA, a library not found).
error=$(python3 -c "import nixl" 2>&1 >/dev/null) || fail "the nixl Python package does not import in this image: ${error##*$'\n'}"
export UCX_PROTO_INFO=y UCX_LOG_LEVEL=info
if [ "${JOB_COMPLETION_INDEX}" = "0" ]; then
  python3 "${GATES_DIR}/nixl_transfer.py" target 2>&1 | tee ${WORK_DIR}/nixl.log || fail "the NIXL target failed"
else
  wait_for_peer; sleep 5
  python3 "${GATES_DIR}/nixl_transfer.py" initiator "$(peer)" 2>&1 | tee ${WORK_DIR}/nixl.log || fail "the NIXL transfer failed"
fi
grep -q "rc_mlx5" ${WORK_DIR}/nixl.log || fail "UCX did not select rc_mlx5"
if [ "${JOB_COMPLETION_INDEX}" != "0" ]; then
  grep -q "wrong values: 0$" ${WORK_DIR}/nixl.log || fail "the transferred data has wrong values"
fi
pass "NIXL over UCX rc_mlx5 with zero wrong values"
