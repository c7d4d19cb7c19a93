#include "scheduler/serve/agent_handler.h"

#include "lib/common/log.h"
#include "lib/net/job_key.h"
#include "lib/net/printable.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"

namespace dbs::scheduler {

using proto::ErrorCode;
using proto::ProtocolError;

AgentHandler::AgentHandler(JobTable& jobs, std::string token, double idle_s)
    : jobs_(jobs),
      token_(std::move(token)),
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

void AgentHandler::authenticate(const proto::RegisterMsg& r) const {
  if (token_.empty()) return;
  if (r.token.empty()) throw ProtocolError(ErrorCode::auth, "missing token");
  if (proto::tokens_equal(net::job_key(token_, r.job), r.token)) return;
  if (!proto::tokens_equal(token_, r.token)) throw ProtocolError(ErrorCode::auth, "invalid token");
  if (jobs_.jobs().count(r.job) != 0)  // the daemon token only creates jobs
    throw ProtocolError(ErrorCode::auth, "job '" + r.job +
                                             "' exists: its ranks present its job key "
                                             "(dbs-scheduler job-key), not the daemon token");
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
    authenticate(*g);
    jobs_.on_register(session, *g, peer, idle_s_);
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
