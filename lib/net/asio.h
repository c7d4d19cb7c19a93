// The one way into Boost.Asio for dbs: Boost 1.74 with g++ 12 in C++20 needs <utility> before
// <boost/asio.hpp>. Every file of dbs includes this header, never Asio directly.
#pragma once

#include <utility>

// Asio's scheduler trips g++ 12's -Wnull-dereference once inlined (a false positive in code we
// do not own); the warning stays on for dbs's own code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio.hpp>
#pragma GCC diagnostic pop

namespace dbs::net {

namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

}  // namespace dbs::net
