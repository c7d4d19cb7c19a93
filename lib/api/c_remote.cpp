// The C ABI's dbs_remote (<dbs/dbs.h>, API 1.2): the way to the daemon, one setter per field,
// each value checked where it is set (lib/api/remote.h).
#include <cmath>
#include <string>

#include "lib/api/c_api.h"
#include "lib/net/address.h"

namespace {

using dbs::api::guard;
using dbs::api::need;

std::string text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

}  // namespace

extern "C" {

dbs_status dbs_remote_create(dbs_remote** out) {
  return guard([&] {
    need(out, "out");
    *out = new dbs_remote{};
  });
}

void dbs_remote_destroy(dbs_remote* remote) { delete remote; }

dbs_status dbs_remote_set_address(dbs_remote* r, const char* address) {
  return guard([&] {
    need(r, "remote");
    const std::string a = text(address);
    if (!a.empty()) dbs::net::parse_host_port(a, "address");
    r->remote.options.address = a;
  });
}

dbs_status dbs_remote_set_job(dbs_remote* r, const char* job) {
  return guard([&] {
    need(r, "remote");
    r->remote.options.job = text(job);
  });
}

dbs_status dbs_remote_set_token_file(dbs_remote* r, const char* token_file) {
  return guard([&] {
    need(r, "remote");
    r->remote.options.token_file = text(token_file);
  });
}

dbs_status dbs_remote_set_timeouts(dbs_remote* r, double timeout_s, double connect_timeout_s) {
  return guard([&] {
    need(r, "remote");
    for (const auto& [name, value] : {std::pair{"timeout_s", timeout_s},
                                      std::pair{"connect_timeout_s", connect_timeout_s}})
      if (!(std::isfinite(value) && value > 0))
        throw dbs::InputError(std::string(name) + " " + std::to_string(value) + ": must be > 0");
    r->remote.options.timeout_s = timeout_s;
    r->remote.options.connect_timeout_s = connect_timeout_s;
  });
}

dbs_status dbs_remote_set_tls_ca(dbs_remote* r, const char* ca_file) {
  return guard([&] {
    need(r, "remote");
    const std::string ca = text(ca_file);
    dbs::api::check_tls_ca(ca, "tls_ca");
    r->remote.options.tls_ca = ca;
  });
}

dbs_status dbs_remote_set_auth(dbs_remote* r, const char* mode) {
  return guard([&] {
    need(r, "remote");
    need(mode, "mode");
    dbs::api::check_auth_mode(mode, "auth");
    r->remote.auth.mode = mode;
  });
}

dbs_status dbs_remote_set_munge_socket(dbs_remote* r, const char* socket) {
  return guard([&] {
    need(r, "remote");
    r->remote.auth.munge_socket = text(socket);
  });
}

int dbs_has_munge(void) { return dbs::api::munge_built() ? 1 : 0; }

}  // extern "C"
