# Gates 1 and 2: the pod sees exactly the RDMA devices its DRA claim allocated, no more.
. "${GATES_DIR:-/gates}/common.sh"
found=$(uverbs_count)
echo "uverbs devices visible: ${found} (expected ${EXPECTED_UVERBS})"
ls -l "${IB_DEV_DIR}" 2>/dev/null || true
[ "${found}" -eq "${EXPECTED_UVERBS}" ] || fail "expected exactly ${EXPECTED_UVERBS} uverbs device(s), saw ${found}"
pass "${found} uverbs device(s), as claimed"
