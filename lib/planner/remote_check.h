// The checks of a dbs::Remote (<dbs/planner.h>), in one place for every way a caller hands one
// in: make_planner runs check_remote on every rank before its collective verdict; the C ABI's
// dbs_remote setters, Python's dbs.Remote and dbs-agent's options run the parts that fit the
// value they take, each error naming the field by the name its caller knows it by ("tls_ca",
// "--tls-ca").
#pragma once

#include <dbs/planner.h>

#include <string>
#include <string_view>

namespace dbs::planner {

// "auto", "token" or "munge". Throws ConfigError "FIELD 'x': must be auto, token or munge", and
// for munge in a library built without munge.
Remote::Auth parse_auth(std::string_view word, const std::string& field = "auth");
// The word of auth: "auto", "token" or "munge".
const char* name(Remote::Auth auth);

// Throws ConfigError naming the field unless address is HOST:PORT ("" passes: no daemon).
void check_address(const std::string& address, const std::string& field = "address");
// Throws ConfigError naming the field unless both are finite and > 0.
void check_timeouts(double timeout_s, double connect_timeout_s);
// Throws ConfigError "FIELD PATH: ..." unless ca_file ("" passes: plain TCP) can be read and
// holds a PEM certificate (lib/net's client context, loaded once and dropped).
void check_tls_ca(const std::string& ca_file, const std::string& field = "tls_ca");

// What needs no file: with an address, its form, a job and the timeouts. Throws ConfigError
// naming the field (address, job, timeout_s, connect_timeout_s).
void check_form(const Remote& remote);
// Everything one rank can check of remote, with an address: check_form, the TLS CA file, the
// token file (read as the remote planner reads it; required for Auth::token) and munge in the
// library for Auth::munge. Throws ConfigError naming the field. Nothing without an address.
void check_remote(const Remote& remote);

}  // namespace dbs::planner
