#include "lib/planner/remote_check.h"

#include <cmath>

#include "lib/auth/credential.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/net/address.h"
#include "lib/net/tls.h"
#include "lib/net/token.h"

namespace dbs::planner {

Remote::Auth parse_auth(std::string_view word, const std::string& field) {
  if (word == "munge" && !auth::munge_built())
    throw ConfigError(field +
                      " 'munge': this dbs is built without munge (install libmunge-dev "
                      "and configure with -Dmunge=enabled)");
  if (word == "munge") return Remote::Auth::munge;
  if (word == "token") return Remote::Auth::token;
  if (word == "auto") return Remote::Auth::automatic;
  throw ConfigError(field + " '" + std::string(word) + "': must be auto, token or munge");
}

const char* name(Remote::Auth auth) {
  switch (auth) {
    case Remote::Auth::automatic:
      return "auto";
    case Remote::Auth::token:
      return "token";
    case Remote::Auth::munge:
      return "munge";
  }
  return "?";
}

void check_address(const std::string& address, const std::string& field) {
  if (!address.empty()) net::parse_host_port(address, field);
}

void check_timeouts(double timeout_s, double connect_timeout_s) {
  for (const auto& [field, value] :
       {std::pair{"timeout_s", timeout_s}, std::pair{"connect_timeout_s", connect_timeout_s}})
    if (!(std::isfinite(value) && value > 0))
      throw ConfigError(format("%s %g: must be > 0", field, value));
}

void check_tls_ca(const std::string& ca_file, const std::string& field) {
  if (ca_file.empty()) return;
  net::client_context(ca_file, field);
}

void check_form(const Remote& remote) {
  if (remote.address.empty()) return;
  check_address(remote.address);
  if (remote.job.empty())
    throw ConfigError("job: the daemon at " + remote.address +
                      " needs the job id, the same on every rank");
  check_timeouts(remote.timeout_s, remote.connect_timeout_s);
}

void check_remote(const Remote& remote) {
  if (remote.address.empty()) return;
  check_form(remote);
  check_tls_ca(remote.tls_ca);
  if (remote.auth == Remote::Auth::munge) parse_auth("munge");
  if (remote.auth == Remote::Auth::token && remote.token_file.empty())
    throw ConfigError("auth 'token' needs token_file, the job's key");
  // Its error names the file ("token file PATH: ...").
  if (remote.auth != Remote::Auth::munge && !remote.token_file.empty())
    net::read_token_file(remote.token_file);
}

}  // namespace dbs::planner
