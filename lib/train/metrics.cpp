#include "lib/train/metrics.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::train::detail {
namespace {

// The header before the busy column: a resumed run appending to such a file keeps its columns.
constexpr std::string_view kHeaderWithoutBusy =
    "epoch,rank,host,batch,samples,steps,compute_s,comm_s,throughput,epoch_s,images_per_s,"
    "efficiency,train_loss,test_loss,test_acc,lr";
const std::string kHeader = std::string(kHeaderWithoutBusy) + ",busy";

}  // namespace

MetricsFile::MetricsFile(const std::string& path, bool append)
    : path_(path), csv_(path.ends_with(".csv")) {
  std::error_code ec;
  const bool empty =
      !append || !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
  if (csv_ && !empty) {  // continue the file in the columns it has, or refuse it untouched
    std::ifstream in(path);
    std::string first;
    if (!std::getline(in, first))
      throw InputError("--metrics " + path + ": cannot read its header");
    if (first == kHeaderWithoutBusy) {
      busy_ = false;
    } else if (first != kHeader) {
      throw InputError(
          format("--metrics %s: its first line is not a header this agent writes "
                 "(expected \"%s\"); give another file to continue in",
                 path.c_str(), kHeader.c_str()));
    }
  }
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  if (!out_) throw InputError("--metrics " + path + ": cannot open for writing");
  if (csv_ && empty) out_ << kHeader << '\n' << std::flush;
}

void MetricsFile::write(const EpochResult& r, std::span<const Report> reports,
                        const std::vector<std::string>& hosts, double lr) {
  std::string block;
  char line[512];
  for (const Report& rep : reports) {
    const auto i = static_cast<std::size_t>(rep.rank);
    const int batch = i < r.batch.size() ? r.batch[i] : rep.batch;
    const std::string& host = i < hosts.size() ? hosts[i] : std::string();
    const bool busy_known = i < r.busy.size();
    if (csv_) {
      std::snprintf(line, sizeof line,
                    "%lld,%d,%s,%d,%lld,%lld,%.6f,%.6f,%.2f,%.6f,%.2f,%.6f,%.6f,%.6f,%.6f,%.9g",
                    static_cast<long long>(r.epoch + 1), rep.rank, host.c_str(), batch,
                    static_cast<long long>(rep.samples), static_cast<long long>(rep.steps),
                    rep.compute_s, rep.comm_s, rep.throughput(), r.wall_s, r.images_per_s,
                    r.efficiency, r.train_loss, r.test_loss, r.test_acc, lr);
      block += line;
      if (busy_)
        block += busy_known ? format(",%.6f", r.busy[i]) : std::string(",");  // empty: unknown
      block += '\n';
    } else {
      nlohmann::json j = {{"epoch", r.epoch + 1},
                          {"rank", rep.rank},
                          {"host", host},
                          {"batch", batch},
                          {"samples", rep.samples},
                          {"steps", rep.steps},
                          {"compute_s", rep.compute_s},
                          {"comm_s", rep.comm_s},
                          {"throughput", rep.throughput()},
                          {"epoch_s", r.wall_s},
                          {"images_per_s", r.images_per_s},
                          {"efficiency", r.efficiency},
                          {"train_loss", r.train_loss},
                          {"test_loss", r.test_loss},
                          {"test_acc", r.test_acc},
                          {"lr", lr}};
      if (busy_known) j["busy"] = r.busy[i];
      block += j.dump() + "\n";
    }
  }
  out_ << block << std::flush;  // the epoch's rows together, flushed before the next epoch
  if (!out_) throw InputError("--metrics " + path_ + ": write failed");
}

}  // namespace dbs::train::detail
