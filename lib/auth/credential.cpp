#include "lib/auth/credential.h"

#include <cstdlib>
#include <memory>

#ifdef DBS_HAVE_MUNGE
#include <munge.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#endif

namespace dbs::auth {

#ifdef DBS_HAVE_MUNGE

namespace {

// How long a caller waits for munged. A munged that runs answers within milliseconds; libmunge
// itself waits 10 s for one that hangs, and 2.25 s of retries for a socket that refuses.
constexpr std::chrono::seconds kAnswerWithin{1};

using Context = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, decltype(&munge_ctx_destroy)>;

Context context(const std::string& socket) {
  Context ctx(munge_ctx_create(), &munge_ctx_destroy);
  if (!ctx) throw MungeError(MungeError::Kind::service, "munge: cannot create a context");
  if (!socket.empty() &&
      munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS)
    throw MungeError(MungeError::Kind::service, "munge: cannot use socket " + socket);
  return ctx;
}

std::string where(const std::string& socket) {
  return socket.empty() ? "munged" : "munged at " + socket;
}

// The socket a context talks to (munge's default where none was set).
std::string socket_of(const Context& ctx) {
  char* path = nullptr;
  if (munge_ctx_get(ctx.get(), MUNGE_OPT_SOCKET, &path) != EMUNGE_SUCCESS || path == nullptr)
    return "";
  return path;
}

// What one call to munged gave: its error code and, by the call, the credential it encoded or
// what the credential it decoded holds.
struct Answer {
  munge_err_t error = EMUNGE_SUCCESS;
  std::string credential;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string payload;
};

// Per munged socket: whether a call to it is under way (since when), and whether the last call
// found no munged behind it (libmunge's EMUNGE_SOCKET).
struct SocketState {
  bool waiting = false;
  std::chrono::steady_clock::time_point since;
  bool gone = false;
};

struct Sockets {
  std::mutex mutex;
  std::map<std::string, SocketState> states;
};

// Never destroyed: a call that outlived its caller may still end while the process exits.
Sockets& sockets() {
  static auto* s = new Sockets;
  return *s;
}

// "" when a connect to the socket at `path` gets through (or cannot be tried), else why not.
std::string refused(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) return "";
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int error = errno;
  ::close(fd);
  if (rc == 0 || (error != ECONNREFUSED && error != ENOENT)) return "";
  return std::generic_category().message(error);
}

[[noreturn]] void no_answer(const std::string& path, const std::string& why, const char* what) {
  throw MungeError(MungeError::Kind::service,
                   "munge: " + where(path) + " does not answer (" + why + "): cannot " + what);
}

// Makes `call` to munged through ctx on a thread of its own, and waits kAnswerWithin for it at
// most, so that a munged that hangs or is gone holds the caller (the daemon's thread, an agent's
// register) that long, not libmunge's 10 s or 2.25 s, and once per outage, not on every call:
// while a call to the same socket is still under way, the next fail at once; after a call that
// found no munged, the next first connect to the socket themselves, without waiting, and fail
// at once where it refuses (munged logs a connection that sends nothing, so a socket that
// answered is not probed). `what` names the call in errors.
Answer ask(Context ctx, const char* what, std::function<Answer(munge_ctx_t)> call) {
  const std::string path = socket_of(ctx);
  Sockets& all = sockets();
  bool gone = false;
  {  // this call is under way from here: the check and the mark under one lock
    std::lock_guard lock(all.mutex);
    SocketState& state = all.states[path];
    if (state.waiting) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - state.since);
      no_answer(path, "a call has waited " + std::to_string(waited.count()) + " s", what);
    }
    gone = state.gone;
    state = {true, std::chrono::steady_clock::now(), gone};
  }
  if (gone) {
    const std::string why = refused(path);
    if (!why.empty()) {
      std::lock_guard lock(all.mutex);
      all.states[path].waiting = false;
      no_answer(path, why, what);
    }
  }
  auto promise = std::make_shared<std::promise<Answer>>();
  std::future<Answer> answer = promise->get_future();
  std::shared_ptr<std::remove_pointer_t<munge_ctx_t>> shared(std::move(ctx));
  try {
    std::thread([shared, call = std::move(call), promise, path] {
      Answer a;
      try {
        a = call(shared.get());
      } catch (...) {
        a.error = EMUNGE_NO_MEMORY;
      }
      {
        std::lock_guard lock(sockets().mutex);
        sockets().states[path] = {false, {}, a.error == EMUNGE_SOCKET};
      }
      promise->set_value(std::move(a));
    }).detach();
  } catch (const std::system_error& e) {
    std::lock_guard lock(all.mutex);
    all.states[path].waiting = false;
    throw MungeError(MungeError::Kind::service,
                     std::string("munge: cannot start a thread to call munged: ") + e.what());
  }
  if (answer.wait_for(kAnswerWithin) != std::future_status::ready)
    no_answer(path, "nothing within " + std::to_string(kAnswerWithin.count()) + " s", what);
  return answer.get();
}

}  // namespace

bool munge_built() {
  return true;
}

std::string munge_encode(const std::string& socket, const std::string& payload, int ttl_s) {
  Context ctx = context(socket);
  if (ttl_s > 0 && munge_ctx_set(ctx.get(), MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS)
    throw MungeError(MungeError::Kind::service, "munge: cannot set a time to live");
  const Answer a = ask(std::move(ctx), "encode a credential", [payload](munge_ctx_t c) {
    Answer out;
    char* cred = nullptr;
    out.error = munge_encode(&cred, c, payload.data(), static_cast<int>(payload.size()));
    std::unique_ptr<char, decltype(&std::free)> owned(cred, &std::free);
    if (out.error == EMUNGE_SUCCESS && cred != nullptr) out.credential = cred;
    return out;
  });
  if (a.error != EMUNGE_SUCCESS)
    throw MungeError(
        MungeError::Kind::service,
        "munge: " + where(socket) + " cannot encode a credential: " + munge_strerror(a.error));
  return a.credential;
}

MungeIdentity munge_decode(const std::string& socket, const std::string& credential) {
  const Answer a = ask(context(socket), "decode", [credential](munge_ctx_t c) {
    Answer out;
    void* data = nullptr;
    int len = 0;
    out.error = munge_decode(credential.c_str(), c, &data, &len, &out.uid, &out.gid);
    std::unique_ptr<void, decltype(&std::free)> owned(data, &std::free);
    if (data != nullptr && len > 0)
      out.payload.assign(static_cast<const char*>(data), static_cast<std::size_t>(len));
    return out;
  });
  switch (a.error) {
    case EMUNGE_SUCCESS:
      break;
    case EMUNGE_CRED_EXPIRED:
      throw MungeError(MungeError::Kind::expired,
                       "munge credential of uid " + std::to_string(a.uid) + " expired", a.uid);
    case EMUNGE_CRED_REPLAYED:
      throw MungeError(MungeError::Kind::replayed,
                       "munge credential of uid " + std::to_string(a.uid) + " replayed", a.uid);
    case EMUNGE_SOCKET:
    case EMUNGE_SNAFU:
    case EMUNGE_NO_MEMORY:
      throw MungeError(MungeError::Kind::service,
                       "munge: " + where(socket) + " cannot decode: " + munge_strerror(a.error));
    default:
      throw MungeError(MungeError::Kind::invalid,
                       std::string("invalid munge credential: ") + munge_strerror(a.error));
  }
  MungeIdentity id;
  id.uid = static_cast<std::uint32_t>(a.uid);
  id.gid = static_cast<std::uint32_t>(a.gid);
  id.payload = a.payload;
  return id;
}

#else  // built without libmunge

namespace {
[[noreturn]] void not_built() {
  throw ConfigError(
      "munge is not built into this dbs (install libmunge-dev and configure with "
      "-Dmunge=enabled)");
}
}  // namespace

bool munge_built() {
  return false;
}

std::string munge_encode(const std::string&, const std::string&, int) {
  not_built();
}

MungeIdentity munge_decode(const std::string&, const std::string&) {
  not_built();
}

#endif

}  // namespace dbs::auth
