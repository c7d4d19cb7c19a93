// In-memory labelled image sets and the Fashion-MNIST loader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dbs::data {

// n images of rows x cols pixels (one channel), pixels scaled to [0, 1], labels in [0, classes).
struct Dataset {
  std::size_t n = 0;
  int rows = 0;
  int cols = 0;
  int classes = 10;
  std::vector<float> images;         // n * rows * cols, image i at i * rows * cols
  std::vector<std::int32_t> labels;  // n

  std::size_t pixels() const { return static_cast<std::size_t>(rows) * cols; }
  const float* image(std::size_t i) const { return images.data() + i * pixels(); }
  // The first min(limit, n) samples (limit 0 = all).
  Dataset head(std::size_t limit) const;
};

// Reads an IDX3 image file and an IDX1 label file (each gzip-compressed or plain) and validates
// them as a pair: equal declared counts, labels in [0, classes). limit > 0 reads only the first
// min(limit, n) samples (read_idx's max_items). Throws InputError naming the file.
Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                      int classes = 10, std::size_t limit = 0);

struct FashionMnist {
  Dataset train;  // 60,000 samples
  Dataset test;   // 10,000 samples
};

// Directory of Debian's dataset-fashion-mnist package.
inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

// Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from dir (".gz" preferred when both
// exist): the first train_limit training and test_limit test samples (0 = all). Throws
// InputError naming the missing or bad file.
FashionMnist load_fashion_mnist(const std::string& dir = kDefaultDataDir,
                                std::size_t train_limit = 0, std::size_t test_limit = 0);

}  // namespace dbs::data
