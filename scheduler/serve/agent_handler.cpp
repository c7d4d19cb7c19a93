#include "scheduler/serve/agent_handler.h"

#include "lib/common/log.h"
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
    log::info("rejected " + session.peer() + " (" + proto::name(e.code()) + "): " + e.what());
    session.fail(e.code(), e.what());
  } catch (const std::exception& e) {  // a bug: this connection goes, the daemon stays
    ++rejected_[static_cast<std::size_t>(ErrorCode::invalid)];
    log::error("internal error on a message of " + session.peer() + ": " + e.what());
    session.fail(ErrorCode::invalid, "internal error");
  }
}

void AgentHandler::authenticate(const std::string& presented) const {
  if (token_.empty()) return;
  if (presented.empty()) throw ProtocolError(ErrorCode::auth, "missing token");
  if (!proto::tokens_equal(token_, presented))
    throw ProtocolError(ErrorCode::auth, "invalid token");
}

void AgentHandler::dispatch(net::LineSession& session, std::string_view line) {
  const proto::Message message = proto::decode(line);
  Peer& peer = peers_[&session];
  if (const auto* r = std::get_if<proto::ReportMsg>(&message)) {
    if (peer.rank < 0) throw ProtocolError(ErrorCode::state, "register first");
    jobs_.on_report(session, peer, *r);
  } else if (std::holds_alternative<proto::HeartbeatMsg>(message)) {
    session.send(heartbeat_);
  } else if (const auto* g = std::get_if<proto::RegisterMsg>(&message)) {
    if (peer.rank >= 0)
      throw ProtocolError(
          ErrorCode::state,
          "already registered as rank " + std::to_string(peer.rank) + " of job '" + peer.job + "'");
    authenticate(g->token);
    jobs_.on_register(session, *g, peer, idle_s_);
  } else if (const auto* b = std::get_if<proto::GoodbyeMsg>(&message)) {
    if (peer.rank >= 0) jobs_.on_goodbye(peer, b->done);
    session.send_and_close(goodbye_);
  } else if (const auto* e = std::get_if<proto::ErrorMsg>(&message)) {
    std::string text = e->code + ": " + e->message;  // the peer's words: printable and short
    if (text.size() > 200) text.resize(200);
    for (char& c : text)
      if (c < 0x20 || c > 0x7e) c = '?';
    log::info("error from " + session.peer() + ": " + text);
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
