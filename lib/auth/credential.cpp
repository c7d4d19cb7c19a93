#include "lib/auth/credential.h"

#include <cstdlib>
#include <memory>

#ifdef DBS_HAVE_MUNGE
#include <munge.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <system_error>
#endif

namespace dbs::auth {

#ifdef DBS_HAVE_MUNGE

namespace {

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

// libmunge retries a refused connect for 2.25 s (it takes the refusal for a full listen queue),
// and a socket whose munged died or is not started refuses every connect: without a check, each
// encode or decode would wait that long, and the daemon's thread with it. So the sockets whose
// munged did not answer are kept here, and a call to one of them first connects itself, without
// waiting: a refusal fails the call at once, an answer (munged is back) lets libmunge go on.
// While munged answers, no call connects twice (munged logs a connection that sends nothing).
class DownSockets {
 public:
  bool down(const std::string& path) {
    std::lock_guard lock(mutex_);
    return down_.contains(path);
  }
  void set(const std::string& path, bool down) {
    std::lock_guard lock(mutex_);
    if (down) {
      down_.insert(path);
    } else {
      down_.erase(path);
    }
  }

 private:
  std::mutex mutex_;
  std::set<std::string> down_;
};

DownSockets& down_sockets() {
  static DownSockets sockets;
  return sockets;
}

// For a socket whose munged did not answer before: "" when a connect to it now gets through (or
// cannot be tried), else why not.
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

// Before a call to munged at ctx's socket: throws MungeError(service) at once where that munged
// did not answer the last call and refuses a connect still. `what` names the call.
void check_down(const Context& ctx, const char* what) {
  const std::string path = socket_of(ctx);
  if (!down_sockets().down(path)) return;
  const std::string why = refused(path);
  if (why.empty()) return;
  throw MungeError(MungeError::Kind::service,
                   "munge: " + where(path) + " does not answer (" + why + "): cannot " + what);
}

// After a call to munged at ctx's socket: whether it answered.
void answered(const Context& ctx, munge_err_t e) {
  down_sockets().set(socket_of(ctx), e == EMUNGE_SOCKET);
}

}  // namespace

bool munge_built() {
  return true;
}

std::string munge_encode(const std::string& socket, const std::string& payload, int ttl_s) {
  Context ctx = context(socket);
  if (ttl_s > 0 && munge_ctx_set(ctx.get(), MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS)
    throw MungeError(MungeError::Kind::service, "munge: cannot set a time to live");
  check_down(ctx, "encode a credential");
  char* cred = nullptr;
  const munge_err_t e =
      munge_encode(&cred, ctx.get(), payload.data(), static_cast<int>(payload.size()));
  answered(ctx, e);
  if (e != EMUNGE_SUCCESS) {
    std::free(cred);
    throw MungeError(
        MungeError::Kind::service,
        "munge: " + where(socket) + " cannot encode a credential: " + munge_strerror(e));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

MungeIdentity munge_decode(const std::string& socket, const std::string& credential) {
  Context ctx = context(socket);
  void* data = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  check_down(ctx, "decode");
  const munge_err_t e = munge_decode(credential.c_str(), ctx.get(), &data, &len, &uid, &gid);
  answered(ctx, e);
  std::unique_ptr<void, decltype(&std::free)> owned(data, &std::free);
  switch (e) {
    case EMUNGE_SUCCESS:
      break;
    case EMUNGE_CRED_EXPIRED:
      throw MungeError(MungeError::Kind::expired,
                       "munge credential of uid " + std::to_string(uid) + " expired", uid);
    case EMUNGE_CRED_REPLAYED:
      throw MungeError(MungeError::Kind::replayed,
                       "munge credential of uid " + std::to_string(uid) + " replayed", uid);
    case EMUNGE_SOCKET:
    case EMUNGE_SNAFU:
    case EMUNGE_NO_MEMORY:
      throw MungeError(MungeError::Kind::service,
                       "munge: " + where(socket) + " cannot decode: " + munge_strerror(e));
    default:
      throw MungeError(MungeError::Kind::invalid,
                       std::string("invalid munge credential: ") + munge_strerror(e));
  }
  MungeIdentity id;
  id.uid = static_cast<std::uint32_t>(uid);
  id.gid = static_cast<std::uint32_t>(gid);
  if (data != nullptr && len > 0)
    id.payload.assign(static_cast<const char*>(data), static_cast<std::size_t>(len));
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
