// The protocol side of an agent connection: decodes each line, authenticates registers,
// dispatches to the JobTable, answers heartbeats and goodbyes, and turns every ProtocolError
// into an error message and a closed connection (that connection only). Never throws.
// A register with a munge credential is decoded off the io thread, on one decoder thread (the
// calls to munged one at a time, as lib/auth/credential.h expects of its callers: a call waits
// 1 s at most, and the next fail at once while one waits), so a slow, hung or dead munged holds
// up only the registers that present credentials; the lines a connection sends after such a
// register are held (64 KiB at most) and handled, in order, once it is answered.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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
  // at munge_socket, on a decoder thread. Tests and the session fuzzer put a stand-in for munged
  // here: it is called on the io thread, and the register is answered on the loop's next turn.
  std::function<auth::MungeIdentity(const std::string& credential)> munge_decode;
  // Whether the daemon authenticates registers at all (else it listens on loopback only).
  bool any() const { return munge || (token_mode && !token.empty()); }
};

class AgentHandler : public net::SessionHandler {
 public:
  // io: the loop the sessions run on, where a decoded credential's register is answered.
  AgentHandler(net::asio::io_context& io, JobTable& jobs, AuthSettings auth, double idle_s);
  ~AgentHandler() override;  // waits for the decodes under way (1 s at most), drops the rest
  AgentHandler(const AgentHandler&) = delete;
  AgentHandler& operator=(const AgentHandler&) = delete;

  void on_line(net::LineSession& session, std::string_view line) override;
  void on_close(net::LineSession& session) override;

  std::uint64_t messages() const { return messages_; }
  static constexpr std::size_t kMaxHeld = 64 * 1024;  // bytes held behind a register in decoding
  const std::array<std::uint64_t, kErrorCodes>& rejected() const { return rejected_; }

 private:
  // What munged said of a credential: who encoded it, or the MungeError it threw.
  struct Decoded {
    auth::MungeIdentity id;
    std::exception_ptr error;
  };
  struct Connection {
    Peer peer;
    std::uint64_t pending = 0;      // the register whose credential is in decoding (0 = none)
    std::vector<std::string> held;  // the lines that came after it
    std::size_t held_bytes = 0;     // their bytes, and kLineCost for each
  };
  static constexpr std::size_t kLineCost = 64;

  // on_line's work once nothing is pending: dispatch, each ProtocolError answered.
  void handle(net::LineSession& session, std::string_view line);
  void dispatch(net::LineSession& session, Connection& c, std::string_view line);
  void reject(net::LineSession& session, const proto::ProtocolError& e);
  // A bug met on a message: this connection goes, the daemon stays.
  void internal_error(net::LineSession& session, const std::exception& e);
  // Who presents r without munge: the daemon token (the admin: any job) or the job's key
  // (net::job_key: its job). Throws ProtocolError(auth).
  Caller authenticate(const proto::RegisterMsg& r) const;
  // Starts decoding r's munge credential; finish() registers r or refuses it.
  void decode(net::LineSession& session, Connection& c, const proto::RegisterMsg& r);
  void finish(const std::weak_ptr<net::LineSession>& weak, std::uint64_t ticket,
              const proto::RegisterMsg& r, const Decoded& d);
  // The user of a decoded credential of r's job and rank (caller.h). Throws ProtocolError(auth)
  // naming the uid where munged gave one.
  Caller munge_caller(const proto::RegisterMsg& r, const Decoded& d) const;

  net::asio::io_context& io_;
  JobTable& jobs_;
  AuthSettings auth_;
  double idle_s_;
  std::unordered_map<net::LineSession*, Connection> peers_;
  std::uint64_t tickets_ = 0;
  // Expires with the handler: an answer posted to the loop after that is dropped.
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
  std::unique_ptr<net::asio::thread_pool> decoders_;  // one thread, made at the first credential
  std::uint64_t messages_ = 0;
  std::array<std::uint64_t, kErrorCodes> rejected_{};
  net::Message heartbeat_, goodbye_;
};

}  // namespace dbs::scheduler
