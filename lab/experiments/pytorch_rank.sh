#!/usr/bin/env bash
# One torchrun rank of the PyTorch studies (torchrun --no_python): /usr/bin/python3 -u "$@",
# after moving itself into the CPU cgroup DBS_QUOTA_CGROUP (a directory of the cgroup file
# system) when RANK equals DBS_QUOTA_RANK, so that only that rank is held to the group's quota.
# The cgroup is made and removed by the study (pytorch_common.py).
set -euo pipefail
if [ -n "${DBS_QUOTA_CGROUP:-}" ] && [ "${RANK:-}" = "${DBS_QUOTA_RANK:-}" ]; then
  echo $$ >"$DBS_QUOTA_CGROUP/cgroup.procs"
fi
exec /usr/bin/python3 -u "$@"
