#include "lib/train/metrics.h"

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "lib/common/error.h"

namespace dbs::train::detail {
namespace {

constexpr const char* kHeader =
    "epoch,rank,host,batch,samples,steps,compute_s,comm_s,throughput,epoch_s,images_per_s,"
    "efficiency,train_loss,test_loss,test_acc,lr\n";

}  // namespace

MetricsFile::MetricsFile(const std::string& path, bool append)
    : path_(path), csv_(path.ends_with(".csv")) {
  std::error_code ec;
  const bool empty = !append || !std::filesystem::exists(path, ec) ||
                     std::filesystem::file_size(path, ec) == 0;
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  if (!out_) throw InputError("--metrics " + path + ": cannot open for writing");
  if (csv_ && empty) out_ << kHeader << std::flush;
}

void MetricsFile::write(const EpochResult& r, std::span<const policy::Report> reports,
                        const std::vector<std::string>& hosts, double lr) {
  std::string block;
  char line[512];
  for (const policy::Report& rep : reports) {
    const auto i = static_cast<std::size_t>(rep.rank);
    const int batch = i < r.batch.size() ? r.batch[i] : rep.batch;
    const std::string& host = i < hosts.size() ? hosts[i] : std::string();
    if (csv_) {
      std::snprintf(line, sizeof line,
                    "%lld,%d,%s,%d,%lld,%lld,%.6f,%.6f,%.2f,%.6f,%.2f,%.6f,%.6f,%.6f,%.6f,%.9g\n",
                    static_cast<long long>(r.epoch + 1), rep.rank, host.c_str(), batch,
                    static_cast<long long>(rep.samples), static_cast<long long>(rep.steps),
                    rep.compute_s, rep.comm_s, rep.throughput(), r.wall_s, r.images_per_s,
                    r.efficiency, r.train_loss, r.test_loss, r.test_acc, lr);
      block += line;
    } else {
      const nlohmann::json j = {{"epoch", r.epoch + 1},     {"rank", rep.rank},
                                {"host", host},             {"batch", batch},
                                {"samples", rep.samples},   {"steps", rep.steps},
                                {"compute_s", rep.compute_s}, {"comm_s", rep.comm_s},
                                {"throughput", rep.throughput()}, {"epoch_s", r.wall_s},
                                {"images_per_s", r.images_per_s}, {"efficiency", r.efficiency},
                                {"train_loss", r.train_loss}, {"test_loss", r.test_loss},
                                {"test_acc", r.test_acc},   {"lr", lr}};
      block += j.dump() + "\n";
    }
  }
  out_ << block << std::flush;  // the epoch's rows together, flushed before the next epoch
  if (!out_) throw InputError("--metrics " + path_ + ": write failed");
}

}  // namespace dbs::train::detail
