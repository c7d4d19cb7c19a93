#include "scheduler/serve/agent_handler.h"

#include "lib/auth/credential.h"
#include "lib/common/log.h"
#include "lib/net/job_key.h"
#include "lib/net/printable.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"

namespace dbs::scheduler {

using proto::ErrorCode;
using proto::ProtocolError;

AgentHandler::AgentHandler(JobTable& jobs, AuthSettings auth, double idle_s)
    : jobs_(jobs),
      auth_(std::move(auth)),
      idle_s_(idle_s),
      heartbeat_(std::make_shared<const std::string>(proto::encode(proto::HeartbeatMsg{}))),
      goodbye_(std::make_shared<const std::string>(proto::encode(proto::GoodbyeMsg{true}))) {}

void AgentHandler::on_line(net::LineSession& session, std::string_view line) {
  ++messages_;
  try {
    dispatch(session, line);
  } catch (const ProtocolError& e) {
    ++rejected_[static_cast<std::size_t>(e.code())];
    log::info("rejected " + session.peer() + " (" + proto::name(e.code()) +
              "): " + net::printable(e.what()));
    session.fail(e.code(), e.what());
  } catch (const std::exception& e) {  // a bug: this connection goes, the daemon stays
    ++rejected_[static_cast<std::size_t>(ErrorCode::invalid)];
    log::error("internal error on a message of " + session.peer() + ": " +
               net::printable(e.what()));
    session.fail(ErrorCode::invalid, "internal error");
  }
}

Caller AgentHandler::authenticate(const proto::RegisterMsg& r) const {
  if (!auth_.any()) return {};
  if (!r.auth.empty()) {
    if (!auth_.munge)
      throw ProtocolError(ErrorCode::auth,
                          "this daemon does not take munge credentials (serve --auth)");
    return authenticate_munge(r);
  }
  const std::string& token = auth_.token;
  if (!auth_.token_mode || token.empty())
    throw ProtocolError(ErrorCode::auth,
                        "missing munge credential (this daemon authenticates "
                        "users with munge: dbs-agent --auth munge)");
  if (r.token.empty())
    throw ProtocolError(ErrorCode::auth,
                        auth_.munge ? "missing token or munge credential" : "missing token");
  if (proto::tokens_equal(net::job_key(token, r.job), r.token)) return {Caller::Kind::job_key};
  if (proto::tokens_equal(token, r.token)) return {Caller::Kind::admin};
  throw ProtocolError(ErrorCode::auth, "invalid token");
}

Caller AgentHandler::authenticate_munge(const proto::RegisterMsg& r) const {
  auth::MungeIdentity id;
  try {
    const std::string credential = r.auth.substr(std::string_view(proto::kMungeScheme).size());
    id = auth_.munge_decode ? auth_.munge_decode(credential)
                            : auth::munge_decode(auth_.munge_socket, credential);
  } catch (const auth::MungeError& e) {
    if (e.kind() == auth::MungeError::Kind::service) log::error(e.what());
    throw ProtocolError(ErrorCode::auth, std::string(e.what()) + " (job '" + r.job + "', rank " +
                                             std::to_string(r.rank) + ")");
  }
  if (id.payload != proto::munge_payload(r.job, r.rank))
    throw ProtocolError(ErrorCode::auth, "munge credential of uid " + std::to_string(id.uid) +
                                             " is not for rank " + std::to_string(r.rank) +
                                             " of job '" + r.job + "'");
  return {Caller::Kind::user, id.uid};
}

void AgentHandler::dispatch(net::LineSession& session, std::string_view line) {
  const proto::Message message = proto::decode(line);
  Peer& peer = peers_[&session];
  if (const auto* r = std::get_if<proto::ReportMsg>(&message)) {
    if (peer.rank < 0) throw ProtocolError(ErrorCode::state, "register first");
    jobs_.on_report(session, peer, *r);
  } else if (std::holds_alternative<proto::HeartbeatMsg>(message)) {
    if (peer.rank < 0) throw ProtocolError(ErrorCode::state, "register first");
    session.send(heartbeat_);
  } else if (const auto* g = std::get_if<proto::RegisterMsg>(&message)) {
    if (peer.rank >= 0)
      throw ProtocolError(
          ErrorCode::state,
          "already registered as rank " + std::to_string(peer.rank) + " of job '" + peer.job + "'");
    jobs_.on_register(session, *g, peer, idle_s_, authenticate(*g));
  } else if (const auto* b = std::get_if<proto::GoodbyeMsg>(&message)) {
    if (peer.rank >= 0) jobs_.on_goodbye(session, peer, b->done);
    session.send_and_close(goodbye_);
  } else if (const auto* e = std::get_if<proto::ErrorMsg>(&message)) {
    log::info("error from " + session.peer() + ": " + net::printable(e->code + ": " + e->message));
    session.close();
  } else {
    throw ProtocolError(ErrorCode::state, "agents do not send plans");
  }
}

void AgentHandler::on_close(net::LineSession& session) {
  const auto it = peers_.find(&session);
  if (it == peers_.end()) return;
  jobs_.on_close(session, it->second);
  peers_.erase(it);
}

}  // namespace dbs::scheduler
