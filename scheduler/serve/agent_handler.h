// The protocol side of an agent connection: decodes each line, authenticates registers,
// dispatches to the JobTable, answers heartbeats and goodbyes, and turns every ProtocolError
// into an error message and a closed connection (that connection only). Never throws.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "lib/net/session.h"
#include "scheduler/serve/jobs.h"

namespace dbs::scheduler {

inline constexpr std::size_t kErrorCodes = 12;  // proto::ErrorCode values

class AgentHandler : public net::SessionHandler {
 public:
  // token empty: no authentication (the daemon then listens on loopback only).
  AgentHandler(JobTable& jobs, std::string token, double idle_s);

  void on_line(net::LineSession& session, std::string_view line) override;
  void on_close(net::LineSession& session) override;

  std::uint64_t messages() const { return messages_; }
  const std::array<std::uint64_t, kErrorCodes>& rejected() const { return rejected_; }

 private:
  void dispatch(net::LineSession& session, std::string_view line);
  // The daemon token creates a job; the job's key (net::job_key) creates or joins it. Throws
  // ProtocolError(auth).
  void authenticate(const proto::RegisterMsg& r) const;

  JobTable& jobs_;
  std::string token_;
  double idle_s_;
  std::unordered_map<net::LineSession*, Peer> peers_;
  std::uint64_t messages_ = 0;
  std::array<std::uint64_t, kErrorCodes> rejected_{};
  net::Message heartbeat_, goodbye_;
};

}  // namespace dbs::scheduler
