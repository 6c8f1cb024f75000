# Gate 3: two-node ib_write_bw over InfiniBand RC, with no TCP fallback and a plausible rate.
. "${GATES_DIR:-/gates}/common.sh"
need ib_write_bw
# The pod sees the host's sysfs, so take the device behind the uverbs node DRA injected.
uverbs=$(ls "${IB_DEV_DIR}" 2>/dev/null | grep '^uverbs' | head -n 1)
[ -n "${uverbs}" ] || fail "no uverbs device in the pod: the NIC claim was not injected"
device=$(cat "${IB_VERBS_SYS_DIR}/${uverbs}/ibdev" 2>/dev/null)
[ -n "${device}" ] || fail "cannot map ${uverbs} to its InfiniBand device"
args="-d ${device} -F --report_gbits -D 10"
if [ "${JOB_COMPLETION_INDEX}" = "0" ]; then
  ib_write_bw ${args} | tee ${WORK_DIR}/bw.log || fail "ib_write_bw server failed"
else
  wait_for_peer; sleep 5
  ib_write_bw ${args} "$(peer)" | tee ${WORK_DIR}/bw.log || fail "ib_write_bw client failed"
fi
grep -Eq "Connection type *: *RC" ${WORK_DIR}/bw.log || fail "transport is not InfiniBand RC"
grep -Eq "Link type *: *IB" ${WORK_DIR}/bw.log || fail "link type is not IB (Ethernet/TCP fallback)"
rate=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {avg=$4} END {print avg+0}' ${WORK_DIR}/bw.log)
awk -v r="${rate}" -v m="${MIN_GBPS}" 'BEGIN {exit !(r >= m)}' || fail "average ${rate} Gb/s is below ${MIN_GBPS} Gb/s"
pass "RC over IB at ${rate} Gb/s on ${device}"
