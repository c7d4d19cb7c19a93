// Job keys: the daemon token is the admin's and opens every job; a job's ranks present the
// job's key instead, hex(HMAC-SHA256(key = daemon token, message = job id)), 64 characters. A
// job script that holds the token computes it (`dbs-scheduler job-key`) and hands it to its
// agents, which present it as their token; a key opens one job only and reveals nothing about
// the token.
// SHA-256 (FIPS 180-4) and HMAC (RFC 2104) are written here, checked against the vectors of
// FIPS 180-4 and RFC 4231: no crypto library is in the dependency set.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dbs::net {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(std::string_view bytes);
Digest hmac_sha256(std::string_view key, std::string_view message);
std::string hex(const Digest& digest);  // lower case, 64 characters

std::string job_key(std::string_view token, std::string_view job);

}  // namespace dbs::net
