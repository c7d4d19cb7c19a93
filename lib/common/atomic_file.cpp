#include "lib/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lib/common/error.h"

namespace dbs {

void write_file_atomic(const std::string& path, std::string_view bytes, unsigned mode) {
  // Unique per process even when hosts share the folder.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string tmp = path + ".tmp." + host + "." + std::to_string(::getpid());
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) throw InputError(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw InputError(path + ": " + what + ": " + std::strerror(e));
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw InputError(path + ": close failed: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw InputError(path + ": rename failed: " + std::strerror(e));
  }
}

}  // namespace dbs
