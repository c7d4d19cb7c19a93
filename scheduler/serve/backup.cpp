#include "scheduler/serve/backup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/read_file.h"
#include "scheduler/serve/archive.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kManifest = "dbs-backup.json";

// The file's bytes; false when it does not exist (removed meanwhile). Throws InputError.
bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT) return false;
    throw InputError(path + ": cannot read: " + std::strerror(errno));
  }
  out = read_rest(f);
  return true;
}

std::vector<std::string> list_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) &&
        it->path().filename().string().find(".tmp.") == std::string::npos)
      out.push_back(it->path().filename().string());
  if (ec) throw InputError(dir + ": cannot list: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

unsigned long crc_of(const std::string& bytes) {
  return ::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                 static_cast<uInt>(bytes.size()));
}

// A member name restore accepts: journal.jsonl, traces/NAME.jsonl or quarantine/NAME.
bool allowed(const std::string& path) {
  if (path == "journal.jsonl") return true;
  const std::size_t slash = path.find('/');
  if (slash == std::string::npos) return false;
  const std::string dir = path.substr(0, slash), name = path.substr(slash + 1);
  return (dir == "traces" || dir == "quarantine") && !name.empty() && name[0] != '.' &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

void sync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

BackupSummary backup_state(const std::string& dir, const std::string& out) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw ConfigError("--state-dir " + dir + ": not a directory");
  BackupSummary s;
  s.journal_version = journal_version(dir);  // refuses a newer journal
  // Traces listed before the journal is read: a job created after the copy has no trace here.
  const std::vector<std::string> traces = list_files(dir + "/traces");
  std::string journal;
  read_file(dir + "/journal.jsonl", journal);
  const std::size_t nl = journal.rfind('\n');
  journal.resize(nl == std::string::npos ? 0 : nl + 1);  // whole lines only
  std::set<std::string> in_journal;
  for (std::size_t at = 0; at < journal.size();) {
    const std::size_t end = journal.find('\n', at);
    try {
      const json r = json::parse(journal.substr(at, end - at));
      if (r.is_object() && r.contains("job") && r["job"].is_string()) {
        in_journal.insert(r["job"].get<std::string>());
        ++s.records;
      }
    } catch (const json::exception&) {  // restore quarantines it, as the daemon would
    }
    at = end + 1;
  }
  std::vector<ArchiveMember> members{{"journal.jsonl", journal}};
  for (const std::string& name : traces) {
    const std::string job = name.ends_with(".jsonl") ? name.substr(0, name.size() - 6) : "";
    if (job.empty() || in_journal.count(job) != 0) continue;
    ArchiveMember m{"traces/" + name, ""};
    if (read_file(dir + "/traces/" + name, m.bytes)) {  // pruned meanwhile: gone
      members.push_back(std::move(m));
      ++s.traces;
    }
  }
  for (const std::string& name : list_files(dir + "/quarantine")) {
    ArchiveMember m{"quarantine/" + name, ""};
    if (read_file(dir + "/quarantine/" + name, m.bytes)) {
      members.push_back(std::move(m));
      ++s.quarantined;
    }
  }
  s.rewritten = in_journal.size();
  json files = json::array();
  for (const auto& m : members)
    files.push_back({{"path", m.path}, {"bytes", m.bytes.size()}, {"crc32", crc_of(m.bytes)}});
  const json manifest = {{"format", "dbs-scheduler-backup"},
                         {"version", kBackupVersion},
                         {"journal_version", s.journal_version},
                         {"files", files}};
  members.insert(members.begin(), {kManifest, manifest.dump(1) + "\n"});
  // Owner-only, as the journal: the archive holds every job's ids, owners and hosts.
  write_file_atomic(out, write_archive(members), 0600);
  return s;
}

BackupSummary restore_state(const std::string& archive, const std::string& dir) {
  std::string bytes;
  if (!read_file(archive, bytes)) throw ConfigError(archive + ": no such file");
  const std::vector<ArchiveMember> members = read_archive(bytes, archive);
  if (members.empty() || members.front().path != kManifest)
    throw InputError(archive + ": not a dbs-scheduler backup (its first member is not " +
                     std::string(kManifest) + ")");
  json manifest;
  try {
    manifest = json::parse(members.front().bytes);
  } catch (const json::exception&) {
    throw InputError(archive + ": " + kManifest + " is not JSON");
  }
  if (!manifest.is_object() || manifest.value("format", "") != "dbs-scheduler-backup" ||
      !manifest.contains("version") || !manifest["version"].is_number_integer() ||
      !manifest.contains("files") || !manifest["files"].is_array())
    throw InputError(archive + ": " + kManifest + " is not a dbs-scheduler backup manifest");
  const int version = manifest["version"].get<int>();
  if (version > kBackupVersion)
    throw ConfigError(archive + ": backup format version " + std::to_string(version) +
                      " is newer than this dbs-scheduler reads (" + std::to_string(kBackupVersion) +
                      "); nothing was changed");
  BackupSummary s;
  s.journal_version = manifest.value("journal_version", -1);
  if (s.journal_version < 0 || s.journal_version > kJournalVersion)
    throw ConfigError(archive + ": journal format version " + std::to_string(s.journal_version) +
                      " is not one this dbs-scheduler reads (0 to " +
                      std::to_string(kJournalVersion) + "); nothing was changed");
  std::map<std::string, const ArchiveMember*> by_path;
  for (std::size_t i = 1; i < members.size(); ++i) by_path[members[i].path] = &members[i];
  if (by_path.size() != manifest["files"].size() || by_path.count("journal.jsonl") == 0)
    throw InputError(archive + ": the archive's members do not match " + kManifest +
                     " (truncated or altered)");
  for (const json& f : manifest["files"]) {
    const std::string path = f.value("path", "");
    const auto it = by_path.find(path);
    if (it == by_path.end() || !allowed(path))
      throw InputError(archive + ": member '" + path + "' is missing or not a state file");
    if (f.value("bytes", std::size_t{0}) != it->second->bytes.size() ||
        f.value("crc32", 0UL) != crc_of(it->second->bytes))
      throw InputError(archive + ": member " + path + " is damaged (size or crc32 differs)");
    if (path.starts_with("traces/")) ++s.traces;
    if (path.starts_with("quarantine/")) ++s.quarantined;
  }
  struct stat st {};
  const bool exists = ::stat(dir.c_str(), &st) == 0;
  if (exists && (!S_ISDIR(st.st_mode) || !fs::is_empty(dir)))
    throw ConfigError(dir + ": not an empty directory; restore writes only into a new or empty " +
                      "one; nothing was changed");
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw InputError(parent.string() + ": " + ec.message());
  const std::string tmp =
      (parent / ("." + target.filename().string() + ".restore." + std::to_string(::getpid())))
          .string();
  try {
    for (const std::string& d : {tmp, tmp + "/traces", tmp + "/quarantine"})
      if (::mkdir(d.c_str(), 0700) != 0) throw InputError(d + ": " + std::strerror(errno));
    for (const auto& [path, m] : by_path) write_file_atomic(tmp + "/" + path, m->bytes);
    ::chmod((tmp + "/journal.jsonl").c_str(), 0600);
    sync_path(tmp + "/traces");
    sync_path(tmp + "/quarantine");
    if (exists && ::rmdir(dir.c_str()) != 0)
      throw InputError(dir + ": cannot replace: " + std::strerror(errno));
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      throw InputError(dir + ": cannot rename " + tmp + " to it: " + std::strerror(errno));
    sync_path(parent.string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  const std::string& journal = by_path.at("journal.jsonl")->bytes;
  s.records = static_cast<std::size_t>(std::count(journal.begin(), journal.end(), '\n')) -
              (s.journal_version > 0 ? 1 : 0);
  return s;
}

}  // namespace dbs::scheduler
