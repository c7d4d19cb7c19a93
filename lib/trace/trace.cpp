#include "lib/trace/trace.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/common/error.h"
#include "lib/trace/records.h"

namespace dbs::trace {

using nlohmann::json;

json run_config(const Settings& settings, int world, json run) {
  run.update(policy::to_json(settings));
  run["world"] = world;
  return run;
}

json header(const json& config) {
  return {{"type", "header"}, {"format", kFormat}, {"version", kVersion}, {"config", config}};
}

json plan_record(const Plan& p, std::int64_t step, const std::string& source) {
  json j = policy::to_json(p);
  j["type"] = "plan";
  j["step"] = step;
  j["source"] = source;
  return j;
}

json rank_record(const Report& r, const std::string& host) {
  json j = policy::to_json(r);
  j["type"] = "rank";
  j["host"] = host;
  j["throughput"] = r.throughput();
  return j;
}

json disturbance_record(const Disturbance& d, std::int64_t epoch) {
  json j = to_json(d);
  j["type"] = "disturbance";
  j["epoch"] = epoch + 1;
  return j;
}

json eval_record(std::int64_t epoch, double wall_s, double samples,
                 std::span<const double> throughput, int replans) {
  return to_json(eval_of(epoch, wall_s, samples, throughput, replans));
}

Writer::Writer(const std::string& path, const json& head, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (file_ == nullptr)
    throw InputError(path + ": cannot open trace for writing: " + std::strerror(errno));
  if (!append) {
    write(head);
    flush();
  }
}

Writer::~Writer() {
  if (file_ != nullptr) std::fclose(file_);
}

void Writer::write(const json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size())
    throw InputError(path_ + ": trace write failed: " + std::strerror(errno));
}

void Writer::flush() {
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    throw InputError(path_ + ": trace flush failed: " + std::strerror(errno));
}

}  // namespace dbs::trace
