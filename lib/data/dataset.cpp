#include "lib/data/dataset.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <string>

#include "lib/common/error.h"
#include "lib/data/idx.h"

namespace dbs::data {
namespace {

constexpr float kPixelMax = 255.0F;  // an 8-bit pixel value maps to value / kPixelMax
constexpr int kClasses = 10;         // Fashion-MNIST

// Path of base + ".gz" in dir, else of base, else throws naming both.
std::string find_idx_file(const std::string& dir, const std::string& base) {
  const std::filesystem::path root(dir);
  for (const std::string& name : {base + ".gz", base}) {
    const std::filesystem::path p = root / name;
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  throw InputError(dir + ": neither " + base + ".gz nor " + base +
                   " found (Fashion-MNIST: `apt-get install dataset-fashion-mnist`, "
                   "or point to a directory holding the four IDX files)");
}

}  // namespace

Dataset Dataset::head(std::size_t limit) const {
  Dataset out;
  out.n = limit == 0 ? n : std::min(limit, n);
  out.rows = rows;
  out.cols = cols;
  out.classes = classes;
  out.images.assign(images.begin(), images.begin() + static_cast<std::ptrdiff_t>(out.n * pixels()));
  out.labels.assign(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(out.n));
  return out;
}

Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path, int classes,
                      std::size_t limit) {
  DBS_CHECK_LT(0, classes);
  const IdxArray images = read_idx(images_path, 3, limit);
  const IdxArray labels = read_idx(labels_path, 1, limit);

  if (images.dims[0] != labels.dims[0]) {
    throw InputError(images_path + " holds " + std::to_string(images.dims[0]) + " images but " +
                     labels_path + " holds " + std::to_string(labels.dims[0]) + " labels");
  }
  if (images.dims[1] > INT_MAX || images.dims[2] > INT_MAX) {
    throw InputError(images_path + ": image size " + std::to_string(images.dims[1]) + "x" +
                     std::to_string(images.dims[2]) + " is too large");
  }

  Dataset out;
  out.n = images.items;
  out.rows = static_cast<int>(images.dims[1]);
  out.cols = static_cast<int>(images.dims[2]);
  out.classes = classes;

  out.labels.resize(out.n);
  for (std::size_t i = 0; i < out.n; ++i) {
    const int label = labels.values[i];
    if (label >= classes) {
      throw InputError(labels_path + ": label " + std::to_string(label) + " at index " +
                       std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
    }
    out.labels[i] = label;
  }

  out.images.resize(images.values.size());
  std::transform(images.values.begin(), images.values.end(), out.images.begin(),
                 [](std::uint8_t v) { return static_cast<float>(v) / kPixelMax; });
  return out;
}

FashionMnist load_fashion_mnist(const std::string& dir, std::size_t train_limit,
                                std::size_t test_limit) {
  // Find all four files before reading any, so a missing one is reported at once.
  const std::string train_images = find_idx_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_idx_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_idx_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_idx_file(dir, "t10k-labels-idx1-ubyte");

  FashionMnist out;
  out.train = load_idx_pair(train_images, train_labels, kClasses, train_limit);
  out.test = load_idx_pair(test_images, test_labels, kClasses, test_limit);
  if (out.train.rows != out.test.rows || out.train.cols != out.test.cols) {
    throw InputError(test_images + ": images are " + std::to_string(out.test.rows) + "x" +
                     std::to_string(out.test.cols) + " but " + train_images + " has " +
                     std::to_string(out.train.rows) + "x" + std::to_string(out.train.cols));
  }
  return out;
}

}  // namespace dbs::data
