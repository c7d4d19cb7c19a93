#include "lib/net/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace dbs::net {

std::size_t raise_fd_limit(std::size_t want) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  const rlim_t target = std::min<rlim_t>(lim.rlim_max, static_cast<rlim_t>(want));
  if (target > lim.rlim_cur) {
    rlimit raised = lim;
    raised.rlim_cur = target;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return static_cast<std::size_t>(lim.rlim_cur);
}

std::size_t connections_within(std::size_t fd_limit, std::size_t wanted, std::size_t reserve) {
  if (fd_limit <= reserve) return 0;
  return std::min(wanted, fd_limit - reserve);
}

}  // namespace dbs::net
