// The protocol side of an agent connection: decodes each line, authenticates registers,
// dispatches to the JobTable, answers heartbeats and goodbyes, and turns every ProtocolError
// into an error message and a closed connection (that connection only). Never throws.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "lib/auth/credential.h"
#include "lib/net/session.h"
#include "scheduler/serve/caller.h"
#include "scheduler/serve/jobs.h"

namespace dbs::scheduler {

inline constexpr std::size_t kErrorCodes = 12;  // proto::ErrorCode values

// What a register must present (ServeOptions::auth).
struct AuthSettings {
  std::string token;         // the daemon token ("" = none)
  bool token_mode = true;    // the token and job keys open jobs (with a token)
  bool munge = false;        // munge credentials open the jobs of their uid
  std::string munge_socket;  // munged's socket ("" = munge's default)
  // Decodes the credential after "munge:" (throws auth::MungeError); empty = auth::munge_decode
  // at munge_socket. Tests and the session fuzzer put a stand-in for munged here.
  std::function<auth::MungeIdentity(const std::string& credential)> munge_decode;
  // Whether the daemon authenticates registers at all (else it listens on loopback only).
  bool any() const { return munge || (token_mode && !token.empty()); }
};

class AgentHandler : public net::SessionHandler {
 public:
  AgentHandler(JobTable& jobs, AuthSettings auth, double idle_s);

  void on_line(net::LineSession& session, std::string_view line) override;
  void on_close(net::LineSession& session) override;

  std::uint64_t messages() const { return messages_; }
  const std::array<std::uint64_t, kErrorCodes>& rejected() const { return rejected_; }

 private:
  void dispatch(net::LineSession& session, std::string_view line);
  // Who presents r: the daemon token (the admin: any job), the job's key (net::job_key: its
  // job), or a munge credential of r's job and rank (a user, caller.h). Throws
  // ProtocolError(auth) naming the uid where munged gave one.
  Caller authenticate(const proto::RegisterMsg& r) const;
  Caller authenticate_munge(const proto::RegisterMsg& r) const;

  JobTable& jobs_;
  AuthSettings auth_;
  double idle_s_;
  std::unordered_map<net::LineSession*, Peer> peers_;
  std::uint64_t messages_ = 0;
  std::array<std::uint64_t, kErrorCodes> rejected_{};
  net::Message heartbeat_, goodbye_;
};

}  // namespace dbs::scheduler
