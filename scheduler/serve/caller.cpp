#include "scheduler/serve/caller.h"

namespace dbs::scheduler {

std::string Caller::describe() const {
  switch (kind) {
    case Kind::open:
      return "no authentication";
    case Kind::admin:
      return "the daemon token";
    case Kind::job_key:
      return "the job's key";
    case Kind::user:
      return "uid " + std::to_string(uid);
  }
  return "?";
}

std::optional<std::uint32_t> Caller::owner() const {
  if (kind == Kind::user) return uid;
  return std::nullopt;
}

bool may_use(const Caller& caller, const std::optional<std::uint32_t>& owner) {
  switch (caller.kind) {
    case Caller::Kind::open:
    case Caller::Kind::admin:
    case Caller::Kind::job_key:  // the key opens its own job only (AgentHandler checks)
      return true;
    case Caller::Kind::user:
      return caller.uid == 0 || (owner && *owner == caller.uid);
  }
  return false;
}

}  // namespace dbs::scheduler
