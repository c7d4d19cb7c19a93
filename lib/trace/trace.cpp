#include "lib/trace/trace.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/common/error.h"

namespace dbs::trace {

using nlohmann::json;

json header(const json& config) {
  return {{"type", "header"}, {"format", kFormat}, {"version", kVersion}, {"config", config}};
}

json plan_record(const policy::Plan& p, std::int64_t step, const std::string& source) {
  return {{"type", "plan"},
          {"epoch", p.epoch + 1},
          {"step", step},
          {"global_batch", p.global_batch},
          {"batch", p.batch},
          {"offset", p.offset},
          {"throughput", p.throughput},
          {"predicted_epoch_s", p.predicted_epoch_s},
          {"ideal_epoch_s", p.ideal_epoch_s},
          {"changed", p.changed},
          {"reason", p.reason},
          {"source", source}};
}

json rank_record(const policy::Report& r, const std::string& host) {
  return {{"type", "rank"},
          {"epoch", r.epoch + 1},
          {"rank", r.rank},
          {"host", host},
          {"batch", r.batch},
          {"samples", r.samples},
          {"steps", r.steps},
          {"compute_s", r.compute_s},
          {"comm_s", r.comm_s},
          {"throughput", r.compute_s > 0 ? static_cast<double>(r.samples) / r.compute_s : 0.0},
          {"step_rate_median", r.step_rate_median}};
}

policy::Plan plan_from_record(const json& j) {
  try {
    policy::Plan p;
    p.epoch = j.at("epoch").get<std::int64_t>() - 1;
    p.global_batch = j.at("global_batch").get<int>();
    p.batch = j.at("batch").get<std::vector<int>>();
    p.offset = j.at("offset").get<std::vector<int>>();
    p.throughput = j.at("throughput").get<std::vector<double>>();
    p.predicted_epoch_s = j.at("predicted_epoch_s").get<double>();
    p.ideal_epoch_s = j.at("ideal_epoch_s").get<double>();
    p.changed = j.at("changed").get<bool>();
    p.reason = j.at("reason").get<std::string>();
    return p;
  } catch (const json::exception& e) {
    throw InputError(std::string("plan record: ") + e.what());
  }
}

policy::Report report_from_record(const json& j) {
  try {
    policy::Report r;
    r.epoch = j.at("epoch").get<std::int64_t>() - 1;
    r.rank = j.at("rank").get<int>();
    r.batch = j.at("batch").get<int>();
    r.samples = j.at("samples").get<std::int64_t>();
    r.steps = j.value("steps", std::int64_t{0});
    r.compute_s = j.at("compute_s").get<double>();
    r.comm_s = j.at("comm_s").get<double>();
    r.step_rate_median = j.value("step_rate_median", 0.0);
    return r;
  } catch (const json::exception& e) {
    throw InputError(std::string("rank record: ") + e.what());
  }
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
