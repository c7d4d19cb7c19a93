#include "lib/auth/credential.h"

#include <cstdlib>
#include <memory>

#ifdef DBS_HAVE_MUNGE
#include <munge.h>
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

}  // namespace

bool munge_built() {
  return true;
}

std::string munge_encode(const std::string& socket, const std::string& payload, int ttl_s) {
  Context ctx = context(socket);
  if (ttl_s > 0 && munge_ctx_set(ctx.get(), MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS)
    throw MungeError(MungeError::Kind::service, "munge: cannot set a time to live");
  char* cred = nullptr;
  const munge_err_t e =
      munge_encode(&cred, ctx.get(), payload.data(), static_cast<int>(payload.size()));
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
  const munge_err_t e = munge_decode(credential.c_str(), ctx.get(), &data, &len, &uid, &gid);
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
