#include "scheduler/serve/state_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/log.h"

namespace dbs::scheduler {

void prepare_state_dir(const std::string& dir) {
  for (const std::string& d : {dir, dir + "/traces"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST)
      throw ConfigError("--state-dir " + d + ": " + std::strerror(errno));
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw ConfigError("--state-dir " + d + " is not a directory");
  }
}

std::vector<JournalRecord> read_journal(const std::string& dir) {
  const std::string path = dir + "/journal.jsonl";
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::ostringstream buf;
  buf << f.rdbuf();
  const std::string bytes = buf.str();
  const std::size_t whole = bytes.rfind('\n') == std::string::npos ? 0 : bytes.rfind('\n') + 1;
  if (whole < bytes.size()) {
    log::warn(path + ": dropping " + std::to_string(bytes.size() - whole) +
              " bytes of an unfinished last record");
    if (::truncate(path.c_str(), static_cast<off_t>(whole)) != 0)
      throw InputError(path + ": cannot truncate: " + std::strerror(errno));
  }
  std::vector<JournalRecord> out;
  std::size_t at = 0, line = 0;
  while (at < whole) {
    const std::size_t nl = bytes.find('\n', at);
    ++line;
    JournalRecord r;
    r.line = line;
    r.text = bytes.substr(at, nl - at);
    at = nl + 1;
    if (r.text.empty()) continue;
    try {
      r.json = nlohmann::json::parse(r.text);
    } catch (const nlohmann::json::exception&) {
      throw InputError(path + " line " + std::to_string(line) + ": not JSON");
    }
    if (!r.json.is_object() || !r.json.contains("type") || !r.json["type"].is_string() ||
        !r.json.contains("job") || !r.json["job"].is_string())
      throw InputError(path + " line " + std::to_string(line) + ": not a journal record");
    out.push_back(std::move(r));
  }
  return out;
}

void rewrite_journal(const std::string& dir, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) {
    text += l;
    text += '\n';
  }
  write_file_atomic(dir + "/journal.jsonl", text);
}

void write_trace(const std::string& dir, const std::string& job, const std::string& text) {
  write_file_atomic(dir + "/traces/" + job + ".jsonl", text);
}

}  // namespace dbs::scheduler
