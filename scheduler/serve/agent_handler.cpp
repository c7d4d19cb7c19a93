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

AgentHandler::AgentHandler(net::asio::io_context& io, JobTable& jobs, AuthSettings auth,
                           double idle_s)
    : io_(io),
      jobs_(jobs),
      auth_(std::move(auth)),
      idle_s_(idle_s),
      heartbeat_(std::make_shared<const std::string>(proto::encode(proto::HeartbeatMsg{}))),
      goodbye_(std::make_shared<const std::string>(proto::encode(proto::GoodbyeMsg{true}))) {}

AgentHandler::~AgentHandler() {
  alive_.reset();
  if (decoders_) {  // the decodes not begun are dropped, the ones under way end within 1 s
    decoders_->stop();
    decoders_->join();
  }
}

void AgentHandler::on_line(net::LineSession& session, std::string_view line) {
  ++messages_;
  Connection& c = peers_[&session];
  if (c.pending == 0) {
    handle(session, line);
    return;
  }
  c.held_bytes += line.size() + kLineCost;
  if (c.held_bytes > kMaxHeld) {
    reject(session,
           ProtocolError(ErrorCode::limit, "more than " + std::to_string(kMaxHeld / 1024) +
                                               " KiB sent before the register was answered"));
    return;
  }
  c.held.emplace_back(line);
}

void AgentHandler::handle(net::LineSession& session, std::string_view line) {
  try {
    dispatch(session, peers_[&session], line);
  } catch (const ProtocolError& e) {
    reject(session, e);
  } catch (const std::exception& e) {
    internal_error(session, e);
  }
}

void AgentHandler::internal_error(net::LineSession& session, const std::exception& e) {
  ++rejected_[static_cast<std::size_t>(ErrorCode::invalid)];
  log::error("internal error on a message of " + session.peer() + ": " + net::printable(e.what()));
  session.fail(ErrorCode::invalid, "internal error");
}

void AgentHandler::reject(net::LineSession& session, const ProtocolError& e) {
  ++rejected_[static_cast<std::size_t>(e.code())];
  log::info("rejected " + session.peer() + " (" + proto::name(e.code()) +
            "): " + net::printable(e.what()));
  session.fail(e.code(), e.what());
}

Caller AgentHandler::authenticate(const proto::RegisterMsg& r) const {
  if (!auth_.any()) return {};
  if (!r.auth.empty())
    throw ProtocolError(ErrorCode::auth,
                        "this daemon does not take munge credentials (serve --auth)");
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

void AgentHandler::decode(net::LineSession& session, Connection& c, const proto::RegisterMsg& r) {
  if (!auth_.munge_decode && !decoders_) decoders_ = std::make_unique<net::asio::thread_pool>(1);
  c.pending = ++tickets_;
  const std::string credential = r.auth.substr(std::string_view(proto::kMungeScheme).size());
  auto answer = [this, alive = std::weak_ptr<const int>(alive_), weak = session.weak_from_this(),
                 ticket = c.pending, r](const Decoded& d) {
    net::asio::post(io_, [this, alive, weak, ticket, r, d] {
      if (!alive.expired()) finish(weak, ticket, r, d);
    });
  };
  // What the decode gave or threw.
  auto decoded = [](const auto& call) {
    Decoded d;
    try {
      d.id = call();
    } catch (...) {
      d.error = std::current_exception();
    }
    return d;
  };
  if (auth_.munge_decode) {
    answer(decoded([&] { return auth_.munge_decode(credential); }));
    return;
  }
  net::asio::post(*decoders_, [socket = auth_.munge_socket, credential, answer, decoded] {
    answer(decoded([&] { return auth::munge_decode(socket, credential); }));
  });
}

void AgentHandler::finish(const std::weak_ptr<net::LineSession>& weak, std::uint64_t ticket,
                          const proto::RegisterMsg& r, const Decoded& d) {
  const std::shared_ptr<net::LineSession> session = weak.lock();
  if (!session || !session->open()) return;
  const auto it = peers_.find(session.get());
  if (it == peers_.end() || it->second.pending != ticket) return;
  Connection& c = it->second;
  c.pending = 0;
  const std::vector<std::string> held = std::move(c.held);
  c.held.clear();
  c.held_bytes = 0;
  try {
    jobs_.on_register(*session, r, c.peer, idle_s_, munge_caller(r, d));
  } catch (const ProtocolError& e) {
    reject(*session, e);
    return;
  } catch (const std::exception& e) {
    internal_error(*session, e);
    return;
  }
  // The lines held behind the register, as they came (the connection is registered now: none
  // of them starts another decode).
  for (const std::string& line : held) {
    if (!session->open()) return;
    handle(*session, line);
  }
}

Caller AgentHandler::munge_caller(const proto::RegisterMsg& r, const Decoded& d) const {
  auth::MungeIdentity id;
  try {
    if (d.error) std::rethrow_exception(d.error);
    id = d.id;
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

void AgentHandler::dispatch(net::LineSession& session, Connection& c, std::string_view line) {
  const proto::Message message = proto::decode(line);
  Peer& peer = c.peer;
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
    if (auth_.munge && !g->auth.empty()) {
      decode(session, c, *g);
      return;
    }
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
  jobs_.on_close(session, it->second.peer);
  peers_.erase(it);
}

}  // namespace dbs::scheduler
