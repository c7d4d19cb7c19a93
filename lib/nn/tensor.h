// float32 NCHW tensors: n samples of a per-sample Shape (c, h, w), stored contiguously.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dbs::nn {

struct Shape {
  int c = 1, h = 1, w = 1;
  std::size_t size() const { return static_cast<std::size_t>(c) * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const {
    return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
  }
};

struct Tensor {
  int n = 0;
  Shape shape;
  std::vector<float> data;  // n * shape.size(), sample i at i * shape.size()

  void resize(int samples, Shape s) {
    n = samples;
    shape = s;
    data.resize(static_cast<std::size_t>(samples) * s.size());
  }
  std::size_t size() const { return data.size(); }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
};

}  // namespace dbs::nn
