// A POSIX ustar archive of regular files, built and read in memory: what `dbs-scheduler backup`
// writes and `restore` reads (tar tf FILE lists it). Names are "DIR/NAME" with a NAME of at most
// 100 bytes and a DIR of at most 155.
#pragma once

#include <string>
#include <vector>

namespace dbs::scheduler {

struct ArchiveMember {
  std::string path;   // relative, '/'-separated
  std::string bytes;  // the file's content
};

// The archive of these members (mode 0600, mtime 0), ending in two zero blocks. Throws
// InputError for a name that does not fit.
std::string write_archive(const std::vector<ArchiveMember>& members);

// The members of an archive written by write_archive. Throws InputError, the message starting
// with `name`, when it is cut short, has a bad header checksum or a member other than a
// regular file.
std::vector<ArchiveMember> read_archive(const std::string& bytes, const std::string& name);

}  // namespace dbs::scheduler
