// The C ABI's dbs_remote (<dbs/dbs.h>): a dbs::Remote set one field per call, each value
// checked where it is set (lib/planner/remote_check.h).
#include <string>

#include "lib/api/c_api.h"
#include "lib/auth/credential.h"
#include "lib/planner/remote_check.h"

namespace {

using dbs::api::guard;
using dbs::api::need;

std::string text(const char* s) {
  return s == nullptr ? std::string() : std::string(s);
}

}  // namespace

extern "C" {

dbs_status dbs_remote_create(dbs_remote** out) {
  return guard([&] {
    need(out, "out");
    *out = new dbs_remote{};
  });
}

void dbs_remote_destroy(dbs_remote* remote) {
  delete remote;
}

dbs_status dbs_remote_set_address(dbs_remote* r, const char* address) {
  return guard([&] {
    need(r, "remote");
    const std::string a = text(address);
    dbs::planner::check_address(a);
    r->remote.address = a;
  });
}

dbs_status dbs_remote_set_job(dbs_remote* r, const char* job) {
  return guard([&] {
    need(r, "remote");
    r->remote.job = text(job);
  });
}

dbs_status dbs_remote_set_token_file(dbs_remote* r, const char* token_file) {
  return guard([&] {
    need(r, "remote");
    r->remote.token_file = text(token_file);
  });
}

dbs_status dbs_remote_set_timeouts(dbs_remote* r, double timeout_s, double connect_timeout_s) {
  return guard([&] {
    need(r, "remote");
    dbs::planner::check_timeouts(timeout_s, connect_timeout_s);
    r->remote.timeout_s = timeout_s;
    r->remote.connect_timeout_s = connect_timeout_s;
  });
}

dbs_status dbs_remote_set_tls_ca(dbs_remote* r, const char* ca_file) {
  return guard([&] {
    need(r, "remote");
    const std::string ca = text(ca_file);
    dbs::planner::check_tls_ca(ca);
    r->remote.tls_ca = ca;
  });
}

dbs_status dbs_remote_set_auth(dbs_remote* r, const char* mode) {
  return guard([&] {
    need(r, "remote");
    need(mode, "mode");
    r->remote.auth = dbs::planner::parse_auth(mode);
  });
}

dbs_status dbs_remote_set_munge_socket(dbs_remote* r, const char* socket) {
  return guard([&] {
    need(r, "remote");
    r->remote.munge_socket = text(socket);
  });
}

int dbs_has_munge(void) {
  return dbs::auth::munge_built() ? 1 : 0;
}

}  // extern "C"
