#include "lib/net/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lib/common/error.h"

namespace dbs::net {

std::string read_token_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw ConfigError("token file " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0;
  int err = ok ? 0 : errno;
  if (ok && S_ISREG(st.st_mode) && (st.st_mode & 077) == 0) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ok = false;
        err = errno;
      }
      if (n <= 0 || text.size() > 65536) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (!ok) throw ConfigError("token file " + path + ": " + std::strerror(err));
  if (!S_ISREG(st.st_mode)) throw ConfigError("token file " + path + " is not a regular file");
  if (st.st_uid != ::geteuid())
    throw ConfigError("token file " + path + " is owned by uid " + std::to_string(st.st_uid) +
                      ", not by this process's user (uid " + std::to_string(::geteuid()) + ")");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw ConfigError("token file " + path + " is accessible by group or others (mode " + mode +
                      "); make it private: chmod 600 " + path);
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.size() < kMinTokenLength)
    throw ConfigError("token file " + path + " holds " + std::to_string(text.size()) +
                      " characters; a token needs at least " + std::to_string(kMinTokenLength) +
                      " (e.g. head -c 32 /dev/urandom | base64 > FILE)");
  return text;
}

}  // namespace dbs::net
