// munge credentials (https://dun.github.io/munge/): a process proves its uid and gid to another
// through the munged of its node, which shares a key with the munged of every other node of the
// cluster, as Slurm's processes do. The agents encode one credential per register, with a payload
// that binds it to that register (proto::munge_payload); the daemon decodes it, which munged
// allows once per credential and within its time to live.
// A call waits 1 s for munged at most (on a thread of its own, which goes on after that): a munged
// that hangs or is gone refuses the first call after 1 s, and the next at once until it answers.
// A call fails at once while another to the same socket is under way: a process calls one at a
// time per socket (the daemon on one decoder thread).
// Built only with libmunge (meson option munge); without it every call throws ConfigError
// saying so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lib/common/error.h"

namespace dbs::auth {

// Whether this build has munge.
bool munge_built();

// What a decode that munged refused went wrong with; the daemon answers each with code auth.
class MungeError : public InputError {
 public:
  enum class Kind {
    invalid,   // not a credential of this cluster's key, or malformed
    expired,   // older than its time to live (EMUNGE_CRED_EXPIRED)
    replayed,  // decoded before (EMUNGE_CRED_REPLAYED)
    service,   // munged not reachable, or another failure of the service itself
  };
  MungeError(Kind kind, const std::string& message, std::optional<std::uint32_t> uid = {})
      : InputError(message), kind_(kind), uid_(uid) {}
  Kind kind() const { return kind_; }
  // Who encoded it, where munged says so (an expired or replayed credential still names its uid).
  std::optional<std::uint32_t> uid() const { return uid_; }

 private:
  Kind kind_;
  std::optional<std::uint32_t> uid_;
};

// A credential of this process's uid and gid carrying `payload`. socket: munged's socket
// ("" = munge's default); ttl_s: its time to live in seconds (0 = munged's default). Throws
// ConfigError when munge is not built, MungeError(service) when munged cannot encode or does not
// answer.
std::string munge_encode(const std::string& socket, const std::string& payload, int ttl_s = 0);

struct MungeIdentity {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string payload;
};

// Who encoded `credential` and what it carries. Throws MungeError (each kind above), ConfigError
// when munge is not built.
MungeIdentity munge_decode(const std::string& socket, const std::string& credential);

}  // namespace dbs::auth
