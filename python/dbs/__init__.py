"""dbs: heterogeneity-aware dynamic batch sizes for synchronous data-parallel training.

The plan (per-rank batch sizes keeping the global batch), the reports it is made from, the
step rule and the epoch permutation come from the C++ library through the extension dbs._dbs.
dbs.torch uses them with PyTorch's DistributedDataParallel.

Errors, one family (dbs.Error, a RuntimeError, is the base of all):
  ConfigError  a bad setting or a call the script must change (also a ValueError): an argument,
               an environment variable, ranks that disagree, a state_dict of another run,
               epochs out of order, a trace file that cannot be written. Raised on every rank
               before training goes on.
  PlanError    the daemon sent a plan for another job; the embedded plan is in force, so a
               loop that catches it trains on.
  InputError   a file or message from outside is malformed (a plan, a report, a trace).
  CommError    the ranks' collectives failed: the job cannot go on.
"""

try:
    from dbs import _dbs
except ImportError as e:  # the package's .py files without the built extension next to them
    raise ImportError(
        "dbs: the extension module dbs._dbs is not built or not importable next to "
        f"{__file__} ({e}). Build it with the meson option python (pybind11-dev, "
        "python3-pybind11 and /usr/bin/python3 needed): meson setup build && ninja -C build, "
        "then `. build/dbs-env.sh` (the build's python/ on PYTHONPATH), or meson install.") from e

Error = _dbs.Error
InputError = _dbs.InputError
ConfigError = _dbs.ConfigError
CommError = _dbs.CommError


class PlanError(Error):
    """The daemon's plan could not be used for a reason that is not an outage: a rank received
    a plan for another job (the address is not this job's daemon, or the daemon is faulty).
    Raised on every rank at the same epoch end, once the embedded policy's plan of the next
    epoch is in force: catch it to train on without the daemon."""


Settings = _dbs.Settings
Plan = _dbs.Plan
Report = _dbs.Report

__all__ = ["Error", "InputError", "ConfigError", "CommError", "PlanError", "Settings", "Plan",
           "Report"]
