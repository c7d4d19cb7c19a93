// dbs-agent filter (under mpirun like training): loads weights trained by dbs, computes the
// penultimate-layer features of every training sample (each rank a contiguous share, the
// training kernels), gathers them on rank 0, which runs PCA -> t-SNE -> per-class DBSCAN and
// writes the kept indices (lib/data/subset.h), optionally a random per-class control with the
// same counts removed, and a self-contained HTML report.
#include "agents/filter.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "lib/comm/mpi.h"
#include "lib/common/atomic_file.h"
#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/log.h"
#include "lib/data/dataset.h"
#include "lib/data/subset.h"
#include "lib/filter/pipeline.h"
#include "lib/filter/report.h"
#include "lib/nn/model.h"
#include "lib/nn/simd.h"
#include "lib/nn/threads.h"

namespace dbs::agent {
namespace {

struct FilterCommand {
  std::string weights;                           // --save-weights file of a dbs run (required)
  std::string model = "cnn";                     // the model those weights belong to
  std::string data_dir = data::kDefaultDataDir;  // Fashion-MNIST IDX files
  std::size_t train_limit = 0;                   // filter the first N training samples (0 = all)
  std::string out = "filter/kept.json";          // kept indices
  std::string random_control;                    // same removals per class at random; "" = none
  std::string report = "filter/report.html";     // HTML report; "" = none
  filter::FilterOptions filter;                  // PCA, t-SNE, DBSCAN settings
  int batch = 256;                               // samples per forward pass
  int threads = 0;                               // TBB threads per rank (0 = all)
  std::uint64_t seed = 1;                        // t-SNE start and the random control
  std::string log_level = "info";
  std::string simd = "auto";
};

const std::vector<std::string> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

bool parse(int argc, char** argv, FilterCommand& o, int& code) {
  CLI::App app{
      "dbs-agent filter: drop the noisy training samples found by t-SNE + DBSCAN on the features\n"
      "of a trained network, and write the kept indices for `dbs-agent --train-subset`.\n"
      "Example: mpirun -np 2 --bind-to none dbs-agent filter --weights run/weights.bin \\\n"
      "           --out filter/kept.json --random-control filter/random.json --report "
      "filter/report.html",
      "dbs-agent filter"};
  app.get_formatter()->column_width(34);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  filter::TsneOptions& t = o.filter.tsne;
  app.add_option("--weights", o.weights, "weights file written by dbs-agent --save-weights")
      ->required();
  app.add_option("--model", o.model, "model of the weights: cnn or lenet")->capture_default_str();
  app.add_option("--data", o.data_dir, "directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  app.add_option("--train-limit", o.train_limit,
                 "filter the first N training samples (0 = all); train with the same --train-limit")
      ->capture_default_str();
  app.add_option("--out", o.out, "write the kept sample indices here (JSON, dbs-subset version 1)")
      ->capture_default_str();
  app.add_option("--random-control", o.random_control,
                 "also write a control subset removing as many samples per class at random");
  app.add_option("--report", o.report, "write the HTML report here (\"\" = none)")
      ->capture_default_str();
  app.add_option("--pca-dims", o.filter.pca_dims, "PCA dimensions before t-SNE (0 = none)")
      ->capture_default_str();
  app.add_option("--perplexity", t.perplexity, "t-SNE perplexity")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  app.add_option("--theta", t.theta, "Barnes-Hut accuracy (0 = exact, slow)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  app.add_option("--iterations", t.iterations, "t-SNE gradient steps")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  app.add_option("--eps", o.filter.eps,
                 "DBSCAN radius in embedding units (0 = each class's k-distance knee)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  app.add_option("--min-samples", o.filter.min_samples, "DBSCAN core threshold (the point counted)")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  app.add_option("--batch", o.batch, "samples per forward pass")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  app.add_option("--threads", o.threads, "TBB threads per rank (0 = all cores of the rank)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  app.add_option("--seed", o.seed, "seed of the t-SNE start and of the random control")
      ->capture_default_str();
  app.add_option("--simd", o.simd, "fast kernels: auto, avx2+fma or x86-64")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "avx2+fma", "x86-64", "native"}));
  app.add_option("--log-level", o.log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  if (auto c = cli::parse(app, argc, argv, "dbs-agent filter")) {
    code = *c;
    return false;
  }
  t.seed = o.seed;
  return true;
}

// Penultimate-layer features of samples [begin, end): (end - begin, dims) row-major.
std::vector<float> features(nn::Model& model, const data::Dataset& d, std::size_t begin,
                            std::size_t end, int batch, std::size_t dims) {
  std::vector<float> out;
  out.reserve((end - begin) * dims);
  const nn::Context ctx;  // inference: no dropout
  for (std::size_t i = begin; i < end; i += static_cast<std::size_t>(batch)) {
    const int m = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch), end - i));
    model.forward(d.image(i), m, ctx);
    const nn::Tensor& f = model.activation(model.layer_count() - 1);
    out.insert(out.end(), f.data.begin(), f.data.begin() + static_cast<std::ptrdiff_t>(m * dims));
  }
  return out;
}

// Creates the folder a rank-0 output goes into.
const std::string& in_folder(const std::string& path) {
  if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  return path;
}

void run(const FilterCommand& o, comm::Communicator& comm) {
  const int rank = comm.rank(), world = comm.size();
  // The filter scores training samples only: one test sample is read, not the 10,000.
  data::Dataset train = data::load_fashion_mnist(o.data_dir, o.train_limit, 1).train;
  auto model = nn::make_model(o.model, {1, train.rows, train.cols}, train.classes, o.seed);
  nn::load_weights(*model, o.weights);
  const std::size_t dims = model->layers_info().back().in.size();
  const std::size_t n = train.n, share = (n + world - 1) / world;
  const std::size_t begin = std::min(n, share * rank), end = std::min(n, begin + share);
  log::info("features of samples [" + std::to_string(begin) + ", " + std::to_string(end) +
            ") from " + o.weights + " (" + std::to_string(dims) + " per sample)");
  std::vector<float> mine = features(*model, train, begin, end, o.batch, dims);
  mine.resize(share * dims, 0.0f);  // equal shares for the allgather; the padding is dropped
  std::vector<float> all(share * dims * world);
  comm.allgather_bytes(mine.data(), mine.size() * sizeof(float), all.data());
  all.resize(n * dims);
  if (rank != 0) return;

  const filter::FilterResult r =
      filter::filter_noise(all.data(), n, dims, train.labels.data(), train.classes, o.filter);
  data::Subset kept{"dbscan", n, data::dataset_hash(train), r.kept};
  data::write_subset(kept, in_folder(o.out));
  std::printf("filter: kept %zu of %zu samples (%zu removed) -> %s\n", r.kept.size(), n,
              n - r.kept.size(), o.out.c_str());
  for (const auto& c : r.classes)
    std::printf("  class %d: %zu samples, %d clusters, eps %.4g, %zu removed\n", c.label, c.samples,
                c.clusters, c.eps, c.removed);
  std::printf("  seconds: PCA %.2f, kNN %.2f, affinities %.2f, t-SNE %.2f, DBSCAN %.3f; KL %.4f\n",
              r.pca_s, r.tsne.neighbours_s, r.tsne.affinity_s, r.tsne.optimise_s, r.dbscan_s,
              r.tsne.kl);
  if (!o.random_control.empty()) {
    std::vector<std::size_t> removed;
    for (const auto& c : r.classes) removed.push_back(c.removed);
    const data::Subset control{"random-control", n, kept.dataset_hash,
                               filter::random_control(train.labels.data(), n, removed, o.seed)};
    data::write_subset(control, in_folder(o.random_control));
    std::printf("random control: kept %zu of %zu -> %s\n", control.indices.size(), n,
                o.random_control.c_str());
  }
  if (!o.report.empty()) {
    filter::ReportInfo info;
    info.title = "dbs filter: " + o.weights;
    if (train.classes == 10) info.class_names = kFashionMnistClasses;
    info.settings = {
        {"weights", o.weights},
        {"model", o.model},
        {"samples", std::to_string(n)},
        {"ranks", std::to_string(world)},
        {"features", std::to_string(dims) + " (penultimate layer)"},
        {"PCA dimensions", std::to_string(o.filter.pca_dims)},
        {"perplexity", format("%g", o.filter.tsne.perplexity)},
        {"theta", format("%g", o.filter.tsne.theta)},
        {"iterations", std::to_string(o.filter.tsne.iterations)},
        {"eps", o.filter.eps > 0 ? format("%g", o.filter.eps) : "per class, k-distance knee"},
        {"min samples", std::to_string(o.filter.min_samples)},
        {"kept indices", o.out + " (subset hash " + data::subset_hash(kept) + ")"}};
    write_file_atomic(in_folder(o.report), filter::html_report(r, train.labels.data(), info));
    std::printf("report -> %s\n", o.report.c_str());
  }
}

}  // namespace

int filter_main(int argc, char** argv) {
  FilterCommand o;
  int code = 0;
  if (!parse(argc, argv, o, code)) return code;
  log::set_level(log::parse_level(o.log_level));
  comm::MpiRuntime mpi(&argc, &argv);
  std::unique_ptr<comm::Communicator> comm;
  try {
    comm = comm::make_mpi(comm::Algorithm::mpi);
  } catch (const std::exception& e) {
    return cli::fail("dbs-agent filter", std::string("cannot start: ") + e.what(),
                     cli::runtime_error);
  }
  log::set_tag("rank " + std::to_string(comm->rank()));
  try {
    nn::use_simd(o.simd);
    nn::ThreadLimit threads(o.threads);
    run(o, *comm);  // ranks other than 0 return after the gather and wait in MPI_Finalize
  } catch (const std::exception& e) {
    log::error(e.what());
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
  return 0;
}

}  // namespace dbs::agent
