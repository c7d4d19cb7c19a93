// dbs-lab exchange: how much of dbs's gain over the equal split the exchange leaves, modelled
// for a range of link speeds and model sizes and three ways of exchanging: the gradient every
// step, the gradient compressed to half its bytes (fp16) and the models averaged every H steps.
//
// Words: W ranks of stand-alone speeds v_i (samples/s), global batch B, P parameters. A step's
// compute is (B / W) / min v under the equal split and B / sum v under dbs (its ideal split); its
// exchange x is the ring allreduce of the step's bytes (lib/replay/model.h: 2 (W - 1) messages of
// latency, 2 (W - 1) / W of the bytes over the link): allreduce_bytes(P, W) every step, half of
// that compressed, and the whole every H steps, x / H a step. The gain is (static compute + x) /
// (dbs compute + x): the bound sum v / (W min v) where x is nothing, 1 where x is everything. The
// compute per sample is the speeds' whatever P is: a larger model here is one with more bytes to
// exchange for the same work, which is what moves the balance between the two.
#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "lab/lab.h"
#include "lib/chart/chart.h"
#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/replay/fit.h"
#include "lib/replay/model.h"

namespace dbs::lab {
namespace {

using nlohmann::json;

struct ExchangeOptions {
  std::vector<double> speeds = {1259, 625, 302};  // the cluster bed's nodes at 1.0/0.5/0.25 cores
  int batch = 256;
  std::vector<std::int64_t> params = {690590, 6905900};  // the CNN, and ten times its bytes
  int every = 8;
  double latency_s = replay::kDefaultLatency;
  std::string svg;  // write the chart here ("" = none)
};

// Link speeds from 10 Mbit/s to 10 Gbit/s, 20 a decade.
std::vector<double> links_mbit() {
  std::vector<double> out;
  for (int k = 20; k <= 80; ++k) out.push_back(std::pow(10.0, k / 20.0));
  return out;
}

struct Mode {
  std::string name;
  double bytes;  // of a step's exchange, over the gradient's
  int every;     // steps per exchange
};

int run(const ExchangeOptions& o) {
  if (o.speeds.size() < 2) throw ConfigError("--speeds: give at least two ranks' speeds");
  for (const double v : o.speeds)
    if (!(v > 0)) throw ConfigError("--speeds: every speed must be > 0 samples/s");
  const int W = static_cast<int>(o.speeds.size());
  const double sum = std::accumulate(o.speeds.begin(), o.speeds.end(), 0.0);
  const double slowest = *std::min_element(o.speeds.begin(), o.speeds.end());
  const double static_s = static_cast<double>(o.batch) / W / slowest;
  const double dbs_s = static_cast<double>(o.batch) / sum;
  const std::vector<Mode> modes = {{"synchronous", 1.0, 1},
                                   {"fp16 (half the bytes)", 0.5, 1},
                                   {"every " + std::to_string(o.every) + " steps", 1.0, o.every}};

  json rows = json::array();
  chart::Chart ch;
  ch.title = "dbs over the equal split, as the exchange grows";
  ch.x_label = "link speed, Mbit/s";
  ch.y_label = "speedup of dbs over the equal split";
  ch.x_log = true;
  ch.y_from_zero = false;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    for (std::size_t k = 0; k < o.params.size(); ++k) {
      chart::Series s;
      s.label = modes[m].name + ", " + format("%.2g", static_cast<double>(o.params[k]) / 1e6) +
                " M params";
      s.color = chart::color(m);
      s.dash = chart::dash_pattern(k);
      const double bytes = replay::allreduce_bytes(o.params[k], W) * modes[m].bytes;
      for (const double link : links_mbit()) {
        const double x =
            replay::ring_allreduce_s(W, bytes, o.latency_s, link * 1e6 / 8) / modes[m].every;
        const double gain = (static_s + x) / (dbs_s + x);
        s.x.push_back(link);
        s.y.push_back(gain);
        rows.push_back({{"exchange", modes[m].name},
                        {"params", o.params[k]},
                        {"link_mbit_s", link},
                        {"exchange_step_s", x},
                        {"gain", gain},
                        {"dbs_over_ideal", (dbs_s + x) / dbs_s}});
      }
      ch.series.push_back(std::move(s));
    }
  }
  if (!o.svg.empty()) write_file_atomic(o.svg, chart::render(ch));
  const json out = {{"model",
                     {{"speeds", o.speeds},
                      {"global_batch", o.batch},
                      {"every", o.every},
                      {"latency_s", o.latency_s},
                      {"static_compute_step_s", static_s},
                      {"dbs_compute_step_s", dbs_s},
                      {"bound", static_s / dbs_s}}},
                    {"rows", rows}};
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

void add_exchange_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ExchangeOptions>();
  auto* c = cli::add_command(
      app, action, "exchange",
      "the modelled speedup of dbs over the equal split against link speed (10 Mbit/s to\n"
      "10 Gbit/s) and model size, for the gradient exchanged every step, compressed to half its\n"
      "bytes (fp16) and the models averaged every H steps; prints it as JSON, draws it with "
      "--svg.\n"
      "Example: dbs-lab exchange --svg docs/img/exchange-gain.svg",
      o, run);
  c->add_option("--speeds", o->speeds, "the ranks' stand-alone speeds, samples/s")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--batch", o->batch, "global batch")->capture_default_str()->check(cli::above(0));
  c->add_option("--params", o->params, "model sizes, parameters (one line each)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(cli::above(0));
  c->add_option("--every", o->every, "H: steps between model averages")
      ->capture_default_str()
      ->check(cli::at_least(1));
  c->add_option("--latency", o->latency_s, "seconds per message of the ring allreduce")
      ->capture_default_str()
      ->check(cli::at_least(0));
  c->add_option("--svg", o->svg, "write the chart here");
}

}  // namespace dbs::lab
