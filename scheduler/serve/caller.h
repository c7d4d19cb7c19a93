// Who registers with the daemon, as the agent handler authenticated them, and the ownership
// rule (docs/concepts/security.md): a job belongs to the uid whose munge credential created it.
// Only that uid, root (uid 0, who can read the munge key anyway) and the admin (the holder of
// the daemon token, or of a job key made from it) may create, join or report to it. A job made
// with the token, or restored from a journal written before owners, has no owner: admin only.
// A daemon without authentication (loopback only) lets everyone in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dbs::scheduler {

struct Caller {
  enum class Kind {
    open,     // the daemon authenticates nobody
    admin,    // presented the daemon token
    job_key,  // presented the job's key (made from the daemon token by its holder)
    user,     // presented a munge credential of uid
  };
  Kind kind = Kind::open;
  std::uint32_t uid = 0;  // Kind::user only
  // "uid 1001", "the daemon token", "the job's key", "no authentication"
  std::string describe() const;
  // The owner of a job this caller creates: its uid for a user (root included), else none.
  std::optional<std::uint32_t> owner() const;
};

// Whether caller may join, report to or see the details of a job owned by owner (none = the
// admin's).
bool may_use(const Caller& caller, const std::optional<std::uint32_t>& owner);

}  // namespace dbs::scheduler
