// The way to the daemon as the C ABI (dbs_remote) and the Python binding take it: the fields a
// caller sets, checked one by one where they are set, each error naming the field by the name
// the caller knows it by ("tls_ca", "auth"), before any collective runs.
#pragma once

#include <string>

#include <dbs/planner.h>

namespace dbs::api {

// What dbs_planner_create_remote and dbs._dbs.make_planner hand to make_planner.
struct Remote {
  RemoteOptions options;
  RemoteAuth auth;
};

// Throws ConfigError "FIELD PATH: ..." unless ca_file can be read and holds a PEM certificate
// (lib/net's client context, loaded once and dropped).
void check_tls_ca(const std::string& ca_file, const std::string& field = "tls_ca");

// Throws ConfigError naming `field` for a mode other than auto, token or munge, and for munge
// in a library built without munge.
void check_auth_mode(const std::string& mode, const std::string& field = "auth");

// Whether this library has munge (meson option munge).
bool munge_built();

// Everything of remote that can be checked on this rank alone, when it has an address: the CA
// file, the auth mode, and a token file for auth "token" (field names as in Python:
// tls_ca, auth, token_file). An empty address checks the auth mode only.
void check_remote(const Remote& remote);

}  // namespace dbs::api
