// A stand-in for munged in the session fuzzer (AuthSettings::munge_decode), so that the register
// handler's munge path and the ownership rule run without a munged, deterministically.
//
// A fake credential is "FAKE.<uid>.<outcome><nonce>.<payload>", the payload's spaces written as
// '~' (a register's "auth" has no spaces; job ids have no '~'). outcome: 'v' valid, 'e' expired,
// 'i' invalid (as a credential of another cluster's key), 's' munged unreachable; the nonce (no
// '.') tells apart credentials of the same uid and payload, as munged's do. As munged does, it
// decodes a valid credential once per input: the second decode is replayed. Anything else is
// invalid.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "lib/auth/credential.h"

namespace dbs::fuzz {

// The credential text after "munge:" for `payload`.
inline std::string fake_credential(std::uint32_t uid, char outcome, std::string payload,
                                   const std::string& nonce = "") {
  std::replace(payload.begin(), payload.end(), ' ', '~');
  return "FAKE." + std::to_string(uid) + "." + outcome + nonce + "." + payload;
}

class FakeMunge {
 public:
  // Forgets the last decode (call before each message).
  void reset() {
    called_ = false;
    last_.reset();
  }
  bool called() const { return called_; }  // a decode was asked for since reset()
  // What the last decode since reset() returned, if it returned.
  const std::optional<auth::MungeIdentity>& last() const { return last_; }

  auth::MungeIdentity decode(const std::string& credential) {
    using auth::MungeError;
    called_ = true;
    last_.reset();
    std::string_view rest = credential;
    constexpr std::string_view kPrefix = "FAKE.";
    std::uint32_t uid = 0;
    if (rest.substr(0, kPrefix.size()) != kPrefix) invalid();
    rest.remove_prefix(kPrefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0) invalid();
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, uid);
    if (ec != std::errc() || end != rest.data() + dot) invalid();
    rest.remove_prefix(dot + 1);
    const auto end_of_outcome = rest.find('.');
    if (end_of_outcome == std::string_view::npos || end_of_outcome == 0) invalid();
    const char outcome = rest[0];
    rest.remove_prefix(end_of_outcome + 1);
    const std::string who = "munge credential of uid " + std::to_string(uid);
    switch (outcome) {
      case 'v':
        break;
      case 'e':
        throw MungeError(MungeError::Kind::expired, who + " expired", uid);
      case 's':
        throw MungeError(MungeError::Kind::service, "munge: fake munged cannot decode");
      default:
        invalid();
    }
    if (!seen_.insert(credential).second)
      throw MungeError(MungeError::Kind::replayed, who + " replayed", uid);
    auth::MungeIdentity id;
    id.uid = uid;
    id.gid = uid;
    id.payload = std::string(rest);
    std::replace(id.payload.begin(), id.payload.end(), '~', ' ');
    last_ = id;
    return id;
  }

 private:
  [[noreturn]] static void invalid() {
    throw auth::MungeError(auth::MungeError::Kind::invalid,
                           "invalid munge credential: not a fake credential");
  }

  std::set<std::string> seen_;
  bool called_ = false;
  std::optional<auth::MungeIdentity> last_;
};

}  // namespace dbs::fuzz
