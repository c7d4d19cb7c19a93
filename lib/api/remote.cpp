#include "lib/api/remote.h"

#include "lib/auth/credential.h"
#include "lib/common/error.h"
#include "lib/net/tls.h"

namespace dbs::api {

void check_tls_ca(const std::string& ca_file, const std::string& field) {
  if (ca_file.empty()) return;
  net::client_context(ca_file, field);
}

void check_auth_mode(const std::string& mode, const std::string& field) {
  if (mode != "auto" && mode != "token" && mode != "munge")
    throw ConfigError(field + " '" + mode + "': must be auto, token or munge");
  if (mode == "munge" && !auth::munge_built())
    throw ConfigError(field + " 'munge': this dbs is built without munge (install libmunge-dev "
                              "and configure with -Dmunge=enabled)");
}

bool munge_built() { return auth::munge_built(); }

void check_remote(const Remote& remote) {
  check_auth_mode(remote.auth.mode);
  if (remote.options.address.empty()) return;
  check_tls_ca(remote.options.tls_ca);
  if (remote.auth.mode == "token" && remote.options.token_file.empty())
    throw ConfigError("auth 'token' needs token_file, the job's key");
}

}  // namespace dbs::api
